/**
 * Reading one key of a queryable state from outside the task thread: from a location, the key's
 * key group and owning subtask, that subtask's state server, and one GET to it (queryable.ts).
 * Used by the control API's read endpoint (control-query.ts), by `eddy query` through it, and by
 * the TypeScript client (query/client.ts), so all three route a key the same way.
 */
import { request, type Agent } from "node:http";
import { describeCause, EddyError } from "../core/errors.ts";
import { assignToKeyGroup, computeOperatorIndexForKeyGroup } from "../core/key-group.ts";
import type { Key } from "../core/key.ts";
import { badQueryKey, checkQueryKey, decodeQueryKey, encodeQueryKey, MAX_QUERY_VALUE_BYTES, type QueryableJob, type QueryLocation } from "./queryable.ts";

/** Whether a job handle also serves queryable state (duck-typed: it has `token` and `queryableStates`). */
export function isQueryableJob<J extends object>(job: J): job is J & QueryableJob {
  const candidate = job as Partial<QueryableJob>;
  return typeof candidate.token === "string" && typeof candidate.queryableStates === "function";
}

/**
 * A key typed by a person (a URL path segment, a command-line argument): JSON when it parses as
 * JSON (`42`, `"42"`, `["a",1]`, `{"$bigint":"9007199254740993"}`), else the text itself as a
 * string key. Throws BAD_KEY for JSON that is not a key (`true`, `{}`) and for oversized keys.
 */
export function parseKeyArgument(text: string): Key {
  let isJson = true;
  try {
    JSON.parse(text);
  } catch {
    isJson = false;
  }
  if (!isJson) return checkQueryKey(text);
  try {
    return decodeQueryKey(text);
  } catch (e) {
    if (e instanceof EddyError && e.code === "BAD_KEY") {
      throw badQueryKey(`${e.message}; to query it as a string, quote it as JSON: ${JSON.stringify(JSON.stringify(text))}`);
    }
    throw e;
  }
}

/**
 * `key` as the protocol's key text (encodeQueryKey), after checking it is a valid key within
 * MAX_QUERY_KEY_BYTES; throws BAD_KEY.
 */
export function encodeCheckedKey(key: Key): string {
  checkQueryKey(key);
  return encodeQueryKey(key);
}


/** Where `key` lives under `location`: its key group, the owning subtask and its server (undefined: not registered yet). */
export function locateKey(location: QueryLocation, key: Key): { readonly keyGroup: number; readonly subtask: number; readonly server: string | undefined } {
  const keyGroup = assignToKeyGroup(key, location.maxParallelism);
  const subtask = computeOperatorIndexForKeyGroup(location.maxParallelism, location.parallelism, keyGroup);
  // A location that came as JSON has null where no server registered yet.
  return { keyGroup, subtask, server: location.servers[subtask] ?? undefined };
}

/** A state server's answer, as it sent it (JSON text). */
export interface StateServerResponse {
  readonly status: number;
  readonly text: string;
}

/** Longest answer read from a state server: the largest value and its envelope. */
const MAX_RESPONSE_BYTES = MAX_QUERY_VALUE_BYTES + 1024;

/**
 * GETs `name`/`keyText` from the state server at `server` (a base URL). Throws
 * STATE_SERVER_UNREACHABLE (refused, reset, not an http URL, an answer over the bound: the
 * location may be stale) or STATE_SERVER_TIMEOUT; any HTTP answer is returned as it is.
 */
export function fetchFromStateServer(
  server: string,
  token: string,
  name: string,
  keyText: string,
  options: { readonly agent: Agent | false; readonly timeoutMs: number },
): Promise<StateServerResponse> {
  if (!server.startsWith("http://")) return Promise.reject(unreachable(server, "it is not an http:// URL"));
  const url = `${server}/v1/state/${encodeURIComponent(name)}?key=${encodeURIComponent(keyText)}`;
  const signal = AbortSignal.timeout(options.timeoutMs);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "GET", agent: options.agent, headers: { authorization: `Bearer ${token}` }, signal }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          res.destroy();
          reject(unreachable(server, `its answer is over ${MAX_RESPONSE_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", (e) => reject(failure(server, e, signal, options.timeoutMs)));
    });
    req.on("error", (e) => reject(failure(server, e, signal, options.timeoutMs)));
    req.end();
  });
}

function failure(server: string, e: Error, signal: AbortSignal, timeoutMs: number): EddyError {
  if (signal.aborted) return new EddyError("STATE_SERVER_TIMEOUT", `the state server at ${server} did not answer within ${timeoutMs} ms`);
  return unreachable(server, describeCause((e as NodeJS.ErrnoException).code ?? e));
}

function unreachable(server: string, why: string): EddyError {
  return new EddyError("STATE_SERVER_UNREACHABLE", `cannot read from the state server at ${server}: ${why}`);
}
