/**
 * The bounds every HTTP endpoint of a job enforces, in one place: the control API
 * (control-server.ts) and the state servers (state-server.ts) are both made by
 * createBoundedServer, with CONTROL_API_BOUNDS and STATE_SERVER_BOUNDS.
 *
 * Why: anyone who can reach the port can open connections (the token is checked per request, after
 * the headers), and every connection holds one of the process's file descriptors, which the job's
 * checkpoints, sinks and worker threads need too. Left to Node's defaults, 1,100 idle connections
 * exhausted a job's descriptors (RLIMIT_NOFILE 1024) and its checkpoints failed with EMFILE. So:
 *
 * - Connections: at most `maxConnections` at once per server; one more is refused at once (Node
 *   closes a socket accepted beyond `server.maxConnections` before reading from it), so the API of
 *   a job holds at most CONTROL_API_BOUNDS.maxConnections + STATE_SERVER_BOUNDS.maxConnections per
 *   thread that runs tasks.
 * - Headers: a connection must deliver a request line and headers within `headersTimeoutMs` of
 *   opening, or of the end of its previous answer (keep-alive). This is a deadline per connection,
 *   not an inactivity timer: bytes trickled in do not extend it. A connection that sent part of a
 *   request is answered 408; one that sent nothing is closed.
 * - Request: its body must be in within `requestTimeoutMs` of its start. This is Node's
 *   `requestTimeout`, which Node checks every `connectionsCheckingInterval` (30 s by default, which
 *   is why a 10 s bound lasted up to 30 s); here every DEADLINE_CHECK_INTERVAL_MS.
 * - Size: request line and headers at most MAX_HEADER_BYTES (431 past it).
 *
 * Nothing bounds how long a handler takes to answer (a savepoint takes as long as it takes).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { EddyError, type ErrorCode } from "../core/errors.ts";
import { errorBody } from "./http-endpoint.ts";

export interface HttpBounds {
  /** Connections open at once; more are refused at once (closed unanswered). */
  readonly maxConnections: number;
  /** From a connection's opening, or the end of its previous answer, until its request's headers are in. */
  readonly headersTimeoutMs: number;
  /** From a request's start until its body is in; at least `headersTimeoutMs`. */
  readonly requestTimeoutMs: number;
}

/** Request line and headers: a state read's key at its bound, URI-encoded, and ordinary headers fit. */
export const MAX_HEADER_BYTES = 8 * 1024;
export const HEADERS_TIMEOUT_MS = 5_000;
export const REQUEST_TIMEOUT_MS = 10_000;
/**
 * How often Node compares requests in progress with `requestTimeoutMs`: a request is cut at most
 * this late. Each check walks the server's connections, at most `maxConnections` of them.
 */
export const DEADLINE_CHECK_INTERVAL_MS = 250;

/**
 * The control API: its clients are the eddy CLI and scripts of the user who runs the job, a few
 * at a time (and MAX_IN_FLIGHT requests are served at once anyway).
 */
export const CONTROL_API_BOUNDS: HttpBounds = { maxConnections: 64, headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: REQUEST_TIMEOUT_MS };

/**
 * A state server, one per thread that runs tasks: a query client keeps up to 8 connections to a
 * server while it reads many keys, the control API up to MAX_IN_FLIGHT (4) for the reads it
 * passes on; 32 serve a few such clients at once, and keep a job with many threads within a
 * descriptor budget.
 */
export const STATE_SERVER_BOUNDS: HttpBounds = { maxConnections: 32, headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: REQUEST_TIMEOUT_MS };

/** An HTTP server that enforces `bounds` (see above) and answers refused requests with JSON errors. */
export function createBoundedServer(bounds: HttpBounds, handle: (req: IncomingMessage, res: ServerResponse) => void): Server {
  checkBounds(bounds);
  const server = createServer({
    maxHeaderSize: MAX_HEADER_BYTES,
    headersTimeout: bounds.headersTimeoutMs,
    requestTimeout: bounds.requestTimeoutMs,
    connectionsCheckingInterval: DEADLINE_CHECK_INTERVAL_MS,
  });
  server.maxConnections = bounds.maxConnections;
  // Node's inactivity timer for kept-alive connections, which it also announces to clients
  // (`Keep-Alive: timeout=5`); the header deadline below closes them at the same time for sure.
  server.keepAliveTimeout = bounds.headersTimeoutMs;

  const deadlines = new WeakMap<Socket, HeaderDeadline>();
  server.on("connection", (socket: Socket) => deadlines.set(socket, headerDeadline(socket, bounds.headersTimeoutMs)));
  // Before `handle`, so the deadline is off before the handler runs and answers.
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const deadline = deadlines.get(req.socket);
    if (deadline === undefined) return;
    deadline.requestStarted();
    res.once("finish", deadline.answered);
  });
  server.on("request", handle);
  answerClientErrors(server);
  return server;
}

function checkBounds(bounds: HttpBounds): void {
  const { maxConnections, headersTimeoutMs, requestTimeoutMs } = bounds;
  const positive = (n: number): boolean => Number.isInteger(n) && n > 0;
  if (!positive(maxConnections) || !positive(headersTimeoutMs) || !positive(requestTimeoutMs) || requestTimeoutMs < headersTimeoutMs) {
    throw new EddyError("INVALID_HTTP_BOUNDS", `HTTP bounds must be positive integers with requestTimeoutMs >= headersTimeoutMs, got ${JSON.stringify(bounds)}`);
  }
}

/** A connection's header deadline: armed while no request of the connection is in progress. */
interface HeaderDeadline {
  /** A request's headers are in: the deadline is off until it is answered. */
  requestStarted(): void;
  /** A request was answered: when it was the last one in progress, the deadline starts again. */
  answered(): void;
}

function headerDeadline(socket: Socket, timeoutMs: number): HeaderDeadline {
  let inProgress = 0;
  let timer: NodeJS.Timeout | undefined;
  let bytesReadWhenArmed = 0;
  const expire = (): void => {
    timer = undefined;
    if (socket.bytesRead > bytesReadWhenArmed) answerAndClose(socket, 408, "REQUEST_TIMEOUT", "the request did not arrive in time");
    else socket.destroy();
  };
  const arm = (): void => {
    bytesReadWhenArmed = socket.bytesRead;
    // A real-time deadline on a real socket, like Node's own socket timers; unref'd, so an open
    // connection does not keep the process alive.
    timer = setTimeout(expire, timeoutMs).unref();
  };
  const disarm = (): void => {
    clearTimeout(timer);
    timer = undefined;
  };
  socket.once("close", disarm);
  arm();
  return {
    requestStarted() {
      inProgress++;
      disarm();
    },
    answered() {
      inProgress--;
      if (inProgress === 0 && !socket.destroyed) arm();
    },
  };
}

/**
 * Answers requests the HTTP parser refuses (headers or URL over MAX_HEADER_BYTES, a request that
 * did not arrive in time, malformed HTTP) with a JSON error instead of Node's bare one, then
 * closes the connection.
 */
function answerClientErrors(server: Server): void {
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Socket) => {
    // As Node's own handler: answer only when no response has started on the socket.
    const started = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage?.headersSent === true;
    if (err.code === "ECONNRESET" || started) {
      socket.destroySoon();
      return;
    }
    if (err.code === "HPE_HEADER_OVERFLOW") answerAndClose(socket, 431, "HEADERS_TOO_LARGE", "request line and headers too large");
    else if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") answerAndClose(socket, 408, "REQUEST_TIMEOUT", "the request did not arrive in time");
    else answerAndClose(socket, 400, "BAD_REQUEST", "malformed HTTP request");
  });
}

const REASONS: Readonly<Record<number, string>> = { 400: "Bad Request", 408: "Request Timeout", 431: "Request Header Fields Too Large" };

/** Writes a JSON error answer straight to the socket (no request object exists), then closes it. */
function answerAndClose(socket: Socket, status: 400 | 408 | 431, code: ErrorCode, message: string): void {
  if (socket.writable) {
    const text = JSON.stringify(errorBody(code, message));
    socket.end(
      `HTTP/1.1 ${status} ${REASONS[status]}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroySoon();
}
