/**
 * The state server of a worker (or of an inline job): answers point reads of queryable state by
 * key, over the protocol written down in queryable.ts. It runs on the thread of the tasks whose
 * state it reads, so a request costs one synchronous `backend.read` and one JSON encode, done
 * between two turns of the task loop; nothing of the request is kept after the answer.
 *
 * Security and bounds: loopback by default; every request carries the job's bearer token
 * (compared in constant time); no request bodies; connections, the request line and headers, and
 * the time a request may take to arrive are bounded by STATE_SERVER_BOUNDS (bounded-server.ts);
 * keys by MAX_QUERY_KEY_BYTES (400 BAD_KEY), values by MAX_QUERY_VALUE_BYTES (413
 * VALUE_TOO_LARGE). A request holds one of `maxInFlight` slots until its answer has been written
 * *and* the event loop has turned once, so a flood gets 503 BUSY beyond `maxInFlight` reads per
 * turn instead of keeping the task loop from running.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { setImmediate as nextTurn } from "node:timers/promises";
import { describeCause, EddyError, type ErrorCode } from "../core/errors.ts";
import type { Key } from "../core/key.ts";
import type { Logger } from "../core/logger.ts";
import { createBoundedServer, STATE_SERVER_BOUNDS, type HttpBounds } from "../http/bounded-server.ts";
import {
  bearerAuthorized,
  createRequestLimit,
  errorReply,
  hasRequestBody,
  listen,
  sendReply,
  UNAUTHORIZED,
  type Reply,
} from "../http/http-endpoint.ts";
import { decodeQueryKey, encodeQueryValue, MAX_QUERY_VALUE_BYTES, type StateServerBackend } from "./queryable.ts";

export interface StateServerOptions {
  /** The job's bearer token. */
  readonly token: string;
  readonly backend: StateServerBackend;
  readonly logger: Logger;
  /** Interface to listen on (default 127.0.0.1; anything else exposes the state beyond this machine). */
  readonly host?: string;
  /** Reads admitted per turn of the event loop (default DEFAULT_STATE_SERVER_IN_FLIGHT). */
  readonly maxInFlight?: number;
  /** Connection and deadline bounds (default STATE_SERVER_BOUNDS); tests shorten the deadlines. */
  readonly bounds?: HttpBounds;
}

export interface StateServer {
  /** Base URL, e.g. `http://127.0.0.1:41234` (what QueryLocation.servers holds). */
  readonly url: string;
  /** Stops listening and closes every connection. May be called twice. */
  close(): Promise<void>;
}

export const DEFAULT_STATE_SERVER_IN_FLIGHT = 16;
const ABSENT: Reply = { status: 200, json: '{"found":false}' };
const STATE_PATH = /^\/v1\/state\/([^/]+)$/;

export async function startStateServer(options: StateServerOptions): Promise<StateServer> {
  const { token, backend, logger } = options;
  if (token.length === 0) throw new EddyError("INTERNAL", "a state server needs the job's token");
  const limit = createRequestLimit(options.maxInFlight ?? DEFAULT_STATE_SERVER_IN_FLIGHT);
  const server = createBoundedServer(options.bounds ?? STATE_SERVER_BOUNDS, (req, res) => {
    limit.run(res, async () => {
      try {
        serveRead(req, res, token, backend, logger);
      } catch (e) {
        logger.error("state server request failed", { cause: describeCause(e) });
        if (!res.headersSent) sendReply(res, errorReply(500, "INTERNAL", describeCause(e)), true);
        else res.destroy();
      }
      // The slot is free once the answer is written and the task loop has had its turn.
      await Promise.all([responseClosed(res), nextTurn()]);
    });
  });
  // The job keeps the process (or worker thread) alive, not its state server.
  server.unref();
  let url: string;
  try {
    url = await listen(server, options.host ?? "127.0.0.1", (e) => logger.warn("state server: the server reported an error; it goes on", { error: describeCause(e) }));
  } catch (e) {
    server.close();
    throw new EddyError("STATE_SERVER_FAILED", `cannot start a state server: ${describeCause(e)}`, { cause: e });
  }
  logger.debug("state server listening", { url });
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }));
  return { url, close };
}

function responseClosed(res: ServerResponse): Promise<void> {
  return res.closed ? Promise.resolve() : new Promise((resolve) => res.once("close", resolve));
}

/** Answers one request, synchronously. */
function serveRead(req: IncomingMessage, res: ServerResponse, token: string, backend: StateServerBackend, logger: Logger): void {
  if (!bearerAuthorized(req.headers.authorization, token)) {
    sendReply(res, UNAUTHORIZED, hasRequestBody(req));
    return;
  }
  const url = new URL(req.url ?? "/", "http://localhost");
  const match = STATE_PATH.exec(url.pathname);
  if (match === null) {
    sendReply(res, errorReply(404, "NOT_FOUND", `no endpoint ${url.pathname} (reads are GET /v1/state/<name>?key=<key>)`), hasRequestBody(req));
    return;
  }
  if (req.method !== "GET") {
    res.setHeader("Allow", "GET");
    sendReply(res, errorReply(405, "METHOD_NOT_ALLOWED", `${url.pathname} takes GET, not ${req.method}`), true);
    return;
  }
  if (hasRequestBody(req)) {
    sendReply(res, errorReply(400, "BAD_REQUEST", "a state read takes no request body"), true);
    return;
  }
  sendReply(res, readState(match[1]!, url.searchParams, backend, logger), false);
}

function readState(rawName: string, params: URLSearchParams, backend: StateServerBackend, logger: Logger): Reply {
  let name: string;
  try {
    name = decodeURIComponent(rawName);
  } catch {
    return errorReply(400, "BAD_REQUEST", "the state name is not a valid URI component");
  }
  const key = keyOf(params);
  if (isReply(key)) return key;
  let answer;
  try {
    answer = backend.read(name, key);
  } catch (e) {
    return readFailure(e, name, logger);
  }
  if (!answer.found) return ABSENT;
  let value: string;
  try {
    // undefined (a value JSON cannot hold) is served as null.
    value = encodeQueryValue(answer.value) ?? "null";
  } catch (e) {
    return errorReply(500, "VALUE_NOT_ENCODABLE", `the value of state '${name}' cannot be encoded as JSON: ${describeCause(e)}`);
  }
  if (value.length > MAX_QUERY_VALUE_BYTES || Buffer.byteLength(value) > MAX_QUERY_VALUE_BYTES) {
    return errorReply(413, "VALUE_TOO_LARGE", `the value is ${Buffer.byteLength(value)} bytes of JSON, more than ${MAX_QUERY_VALUE_BYTES}`);
  }
  return { status: 200, json: `{"found":true,"value":${value}}` };
}

/** The key of the query string (`key`, and the optional `keyGroup`, which the backend does not need), or a 400. */
function keyOf(params: URLSearchParams): Key | Reply {
  for (const name of params.keys()) {
    if (name !== "key" && name !== "keyGroup") return errorReply(400, "BAD_REQUEST", `unknown parameter '${name}' (allowed: key, keyGroup)`);
  }
  const keys = params.getAll("key");
  if (keys.length !== 1) return errorReply(400, "BAD_KEY", keys.length === 0 ? "missing parameter 'key' (the key as JSON)" : "more than one parameter 'key'");
  try {
    return decodeQueryKey(keys[0]!);
  } catch (e) {
    return errorReply(400, "BAD_KEY", e instanceof Error ? e.message : String(e));
  }
}

function isReply(x: Key | Reply): x is Reply {
  return typeof x === "object" && !Array.isArray(x) && "status" in x;
}

const READ_FAILURES: Readonly<Partial<Record<ErrorCode, number>>> = { UNKNOWN_STATE: 404, NOT_OWNER: 409, BAD_KEY: 400, NOT_SERVING: 503 };

function readFailure(e: unknown, name: string, logger: Logger): Reply {
  if (e instanceof EddyError && READ_FAILURES[e.code] !== undefined) return errorReply(READ_FAILURES[e.code]!, e.code, e.message);
  logger.error("queryable state read failed", { state: name, cause: describeCause(e) });
  return errorReply(500, e instanceof EddyError ? e.code : "INTERNAL", `reading state '${name}' failed: ${describeCause(e)}`);
}
