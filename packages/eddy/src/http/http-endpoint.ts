/**
 * What the job's loopback JSON endpoints share: the control API (control-server.ts) and the state
 * servers (state-server.ts). Bearer-token checks in constant time, JSON answers with
 * `{ error: { code, message } }` for failures (the code one of ERROR_CODES, read back by the
 * clients with `answerError`), a bound on requests in flight (503 BUSY past it), and listening.
 * The bounds on connections, header sizes and deadlines are in bounded-server.ts.
 */
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { EddyError, type ErrorCode, type ErrorDomain } from "../core/errors.ts";
import { isErrorCode } from "../core/error-codes.ts";

/** An answer to a request: status and a body to encode as JSON, or JSON text to send as it is. */
/** A JSON answer (`body` to serialize, or `json` already serialized), or text of another type (Prometheus metrics). */
export type Reply =
  | { readonly status: number; readonly body: unknown }
  | { readonly status: number; readonly json: string }
  | { readonly status: number; readonly text: string; readonly contentType: string };

export function errorBody(code: ErrorCode, message: string): { error: { code: ErrorCode; message: string } } {
  return { error: { code, message } };
}

export function errorReply(status: number, code: ErrorCode, message: string): Reply {
  return { status, body: errorBody(code, message) };
}

/**
 * The EddyError an error answer (`body`, parsed JSON or undefined) stands for, on the client's
 * side: the answer's code when this Eddy knows it, else UNKNOWN_ERROR_CODE with the status and the
 * code (or its absence) in the message. An answer carries no domain: the client derives it from
 * the status and passes it, with the retry hint, in `blame`.
 */
export function answerError(
  status: number,
  body: unknown,
  fallbackMessage: string,
  blame: { readonly domain: ErrorDomain; readonly retryable: boolean },
): EddyError {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null | undefined)?.error;
  const code = error?.code;
  const message = typeof error?.message === "string" ? error.message : fallbackMessage;
  if (isErrorCode(code)) return new EddyError(code, message, blame);
  const what = typeof code === "string" ? `the unknown code '${code}'` : "no code";
  return new EddyError("UNKNOWN_ERROR_CODE", `${message} (HTTP ${status} with ${what})`, blame);
}

/** Whether `header` is `Bearer <token>`; compared in constant time. */
export function bearerAuthorized(header: string | undefined, token: string): boolean {
  if (header === undefined || !header.startsWith("Bearer ")) return false;
  const given = Buffer.from(header.slice("Bearer ".length).trim(), "utf8");
  const expected = Buffer.from(token, "utf8");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export const UNAUTHORIZED: Reply = errorReply(401, "UNAUTHORIZED", "missing or wrong bearer token (see the job's token file)");

/** Writes the reply; with `closeConnection` the socket is closed after it (unread body, bad client). */
export function sendReply(res: ServerResponse, reply: Reply, closeConnection: boolean): void {
  const text = "json" in reply ? reply.json : "text" in reply ? reply.text : JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    "Content-Type": "contentType" in reply ? reply.contentType : "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(text),
    "Cache-Control": "no-store",
    ...(closeConnection ? { Connection: "close" } : {}),
  });
  res.end(text);
}

/** Whether the request announces a body (any length, or chunked). */
export function hasRequestBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

/** At most `maxInFlight` requests handled at once; the rest are answered 503 BUSY at once. */
export interface RequestLimit {
  /**
   * Runs `handle` for the request when a slot is free, holding the slot until its promise settles;
   * else answers 503 BUSY and closes the connection. `handle`'s promise must not reject.
   */
  run(res: ServerResponse, handle: () => Promise<void>): void;
  /** Resolves when every request admitted so far has settled. */
  settled(): Promise<void>;
}

export function createRequestLimit(maxInFlight: number): RequestLimit {
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1) throw new RangeError(`maxInFlight must be a positive integer, got ${maxInFlight}`);
  const inFlight = new Set<Promise<void>>();
  const busy = errorReply(503, "BUSY", `too many requests in flight (at most ${maxInFlight}); retry later`);
  return {
    run(res, handle) {
      if (inFlight.size >= maxInFlight) {
        sendReply(res, busy, true);
        return;
      }
      const handled = handle();
      inFlight.add(handled);
      void handled.finally(() => inFlight.delete(handled));
    },
    settled: async () => {
      await Promise.allSettled([...inFlight]);
    },
  };
}

/**
 * Listens on `host` at a free port; resolves with the base URL (`http://127.0.0.1:41234`). Once
 * listening, `onError` hears what the server reports later (an accept that failed, e.g. EMFILE):
 * the server goes on, and an 'error' event without a listener would end the process.
 */
/** Listens on `host`:`port` (0: any free port); resolves with the server's URL. */
export async function listen(server: Server, host: string, onError: (error: Error) => void, port = 0): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      server.on("error", onError);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  return `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;
}
