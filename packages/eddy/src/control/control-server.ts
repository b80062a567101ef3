/**
 * The local control API of a running job: a small JSON-over-HTTP server that `eddy savepoint /
 * stop / cancel / list` talk to (control-client.ts).
 *
 * Security: it listens on loopback (127.0.0.1) unless told otherwise; every request carries
 * `Authorization: Bearer <token>`, a random token kept in a 0600 file next to the job's registry
 * entry (control-registry.ts), or the web UI's session cookie (web-ui.ts, web-ui-auth.ts: set by
 * a one-time login link; a POST with it also needs the session's CSRF token); every answer
 * carries a strict Content-Security-Policy and the other headers of SECURITY_HEADERS; it never takes a path from the client: a savepoint goes to the
 * job's own savepoint directory, and a client that wants it elsewhere moves it itself.
 *
 * Bounds: those of CONTROL_API_BOUNDS (bounded-server.ts: connections, header size, header and
 * request deadlines), request bodies up to MAX_BODY_BYTES, and at most MAX_IN_FLIGHT requests
 * handled at once (more get 503). A savepoint may take as long as it takes: the response is
 * bounded by the client's timeout, not here.
 *
 * Endpoints (every body is JSON: the result, or `{ error: { code, message } }`):
 *   GET  /v1/job            → 200 JobInfo
 *   POST /v1/job/savepoint  {}                                 → 200 SavepointResult
 *   POST /v1/job/stop       { savepoint: boolean, drain?: boolean } → 200 { savepoint: SavepointResult | null }
 *   POST /v1/job/cancel     {}                                 → 202 {}
 *   GET  /metrics           → 200 the job's metrics in Prometheus's text format (prometheus-exposition.ts;
 *                             when the job offers metricsSnapshot, as every job started by startJob does)
 * and, when the job is an ObservedJob (every job startJob returns is), the read endpoints of the
 * REST API (rest-api.ts: the graph, metrics per vertex, watermarks, backpressure, checkpoints,
 * exceptions, configuration), with `GET /v1/job` then answering the fuller overview;
 * and, for an ObservedJob, the web UI (web-ui.ts): `GET /` (the page), `/ui/app.js`, `/ui/app.css`,
 * `/ui/login?nonce=…`, the live stream `GET /v1/job/events`, and `POST /v1/ui/login-link` (bearer only);
 * and, when the job also implements QueryableJob (has `token` and `queryableStates`), the
 * queryable-state endpoints of control-query.ts. Such a job brings its own token, which its state
 * servers check too, so one token file grants both; otherwise the server makes a random one.
 * A failure of the job's method is 409 when it is an EddyError of the "user" or "config" domain
 * (the request does not fit the job: not running, no checkpointing, …), else 500.
 */
import { randomBytes } from "node:crypto";
import { Agent, type IncomingMessage, type ServerResponse } from "node:http";
import { chmod, link, mkdir, open, readFile, unlink } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { describeCause, EddyError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { ControlledJob, JobState, JobStatus } from "../coordinator/control.ts";
import {
  checkJobId,
  controlHome,
  isPidAlive,
  jobsDir,
  readRegistryEntry,
  REGISTRY_VERSION,
  registryFile,
  type RegistryEntry,
} from "./control-registry.ts";
import { queryRoutes, type PatternRoute } from "./control-query.ts";
import { PROMETHEUS_CONTENT_TYPE, prometheusExposition } from "./prometheus-exposition.ts";
import { CONTROL_API_BOUNDS, createBoundedServer, type HttpBounds } from "../http/bounded-server.ts";
import {
  bearerAuthorized,
  createRequestLimit,
  errorReply,
  listen,
  sendReply,
  UNAUTHORIZED,
  type Reply,
} from "../http/http-endpoint.ts";
import { isQueryableJob } from "../queryable/state-lookup.ts";
import { isObservedJob } from "../coordinator/control.ts";
import { jobOverview, restRoutes } from "./rest-api.ts";
import { createWebUi, setSecurityHeaders, type Caller, type WebUi } from "./web-ui.ts";
import { MAX_PROFILE_SECONDS } from "../coordinator/thread-profile.ts";

/** What `GET /v1/job` answers. */
export interface JobInfo {
  readonly id: string;
  readonly name: string;
  readonly status: JobStatus;
  readonly pid: number;
  readonly startedAtMs: number;
  /** The fields below: only for jobs the REST API observes (rest-api.ts, jobOverview). */
  readonly state?: JobState;
  readonly restarts?: number;
  readonly throughput?: { readonly recordsInPerSecond: number | null; readonly recordsOutPerSecond: number | null };
  readonly checkpoints?: { readonly completed: number; readonly failed: number; readonly lastCompleted: { readonly id: number; readonly triggerTimeMs: number; readonly durationMs: number | null } | null } | null;
}

export interface ControlServerOptions {
  /** Where the registry lives (default: EDDY_HOME, else ~/.eddy). */
  readonly home?: string;
  readonly logger: Logger;
  /** Interface to listen on (default 127.0.0.1; anything else exposes the API beyond this machine). */
  readonly host?: string;
  /** Port to listen on (default 0: any free one); a fixed one gives Prometheus a stable target (`-D rest.port=9249`). */
  readonly port?: number | undefined;
  /** Connection and deadline bounds (default CONTROL_API_BOUNDS); tests shorten the deadlines. */
  readonly bounds?: HttpBounds;
}

export interface ControlServer {
  readonly url: string;
  readonly tokenFile: string;
  readonly registryFile: string;
  /**
   * Stops accepting requests, lets requests in flight answer (for up to CLOSE_GRACE_MS), and
   * removes the registry and token files if they are still this server's. May be called twice.
   */
  close(): Promise<void>;
}

export const MAX_BODY_BYTES = 16 * 1024;
export const MAX_IN_FLIGHT = 4;
const CLOSE_GRACE_MS = 5_000;

/** Registry files of servers open in this process: a second server for the same job id is refused. */
const openHere = new Set<string>();

type Route = {
  readonly method: "GET" | "POST";
  readonly handle: (body: Record<string, unknown>, query: URLSearchParams) => Promise<Reply>;
  /** Only for the bearer token's holder, not a browser session (making login links). */
  readonly bearerOnly?: boolean;
};

/** The endpoints: by exact path, then GET endpoints by pattern. */
interface Routes {
  readonly exact: ReadonlyMap<string, Route>;
  readonly patterns: readonly PatternRoute[];
}

export async function startControlServer(job: ControlledJob, options: ControlServerOptions): Promise<ControlServer> {
  checkJobId(job.id);
  const home = controlHome(options.home);
  const regFile = registryFile(home, job.id);
  // Claimed before the first await, so two servers of this process cannot both pass the check.
  if (openHere.has(regFile)) throw jobIdInUse(job.id, process.pid);
  openHere.add(regFile);
  try {
    return await openControlServer(job, options, jobsDir(home), regFile);
  } catch (e) {
    openHere.delete(regFile);
    if (e instanceof EddyError) throw e;
    throw new EddyError("CONTROL_SERVER_FAILED", `cannot start the control API of job '${job.id}': ${describeCause(e)}`, { cause: e });
  }
}

async function openControlServer(job: ControlledJob, options: ControlServerOptions, dir: string, regFile: string): Promise<ControlServer> {
  const { logger } = options;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // An existing directory may be wider open (made by hand): others must not plant entries in it.
  await chmod(dir, 0o700);
  await claimJobId(dir, job.id, logger);

  const token = isQueryableJob(job) ? checkJobToken(job.id, job.token) : randomBytes(32).toString("hex");
  const tokenFile = join(dir, `${job.id}.${process.pid}.token`);
  // The name holds this process's pid, so a file already there is a leftover of a process
  // that had the same pid and died before publishing its entry.
  await unlink(tokenFile).catch(ignoreMissing);
  await writeExclusive(tokenFile, token);

  // Keep-alive connections to the job's state servers, for proxied reads.
  const agent = new Agent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT });
  const rest = isObservedJob(job) ? restRoutes(job) : undefined;
  let url = "";
  const ui = isObservedJob(job) ? createWebUi(job, { logger, port: () => Number(new URL(url).port) }) : undefined;
  const profileCpu = isObservedJob(job) ? job.profileCpu?.bind(job) : undefined;
  const uiRoutes: [string, Route][] =
    ui === undefined
      ? []
      : [
          ...(profileCpu === undefined
            ? []
            : [
                [
                  "/v1/job/profile",
                  {
                    method: "POST",
                    handle: async (body: Record<string, unknown>) => {
                      const { thread, seconds } = profileRequest(body);
                      return { status: 200, body: await profileCpu(thread, seconds) };
                    },
                  },
                ] as [string, Route],
              ]),
          [
            "/v1/ui/login-link",
            {
              method: "POST",
              bearerOnly: true,
              handle: async (body) => {
                onlyFields(body, {});
                return { status: 200, body: ui.loginLink(url) };
              },
            },
          ],
        ];
  const routes: Routes = {
    exact: new Map([
      ...controlRoutes(job),
      ...[...(rest?.exact ?? [])].map(([path, handle]): [string, Route] => [path, { method: "GET", handle: (_body, query) => handle(query) }]),
      ...uiRoutes,
    ]),
    patterns: [...(rest?.patterns ?? []), ...(isQueryableJob(job) ? queryRoutes(job, agent) : [])],
  };
  const limit = createRequestLimit(MAX_IN_FLIGHT);
  const server = createBoundedServer(options.bounds ?? CONTROL_API_BOUNDS, (req, res) => {
    setSecurityHeaders(res);
    const requestUrl = new URL(req.url ?? "/", "http://localhost");
    const caller = callerOf(req, token, ui);
    // The page, its files, the login and the live streams: cheap, or long-lived (a stream must not hold one of the MAX_IN_FLIGHT slots).
    if (ui !== undefined && ui.serve(req, res, requestUrl, caller)) return;
    limit.run(res, () =>
      serve(req, res, requestUrl, caller, ui, routes, logger).catch((e: unknown) => {
        logger.error("control request failed", { job: job.id, cause: describeCause(e) });
        if (!res.headersSent) sendReply(res, errorReply(500, "INTERNAL", describeCause(e)), true);
      }),
    );
  });
  // The job keeps the process alive, not its control API.
  server.unref();

  try {
    url = await listen(server, options.host ?? "127.0.0.1", (e) => logger.warn("control API: the server reported an error; it goes on", { job: job.id, error: describeCause(e) }), options.port);
    await publish(regFile, { version: REGISTRY_VERSION, id: job.id, name: job.name, pid: process.pid, url, tokenFile, startedAtMs: job.startedAtMs });
  } catch (e) {
    server.close();
    agent.destroy();
    await unlinkIfOurs(tokenFile, token);
    throw e;
  }
  logger.info("control API listening", { job: job.id, url, tokenFile });

  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    server.close();
    server.closeIdleConnections();
    ui?.close();
    const grace = new AbortController();
    await Promise.race([limit.settled(), delay(CLOSE_GRACE_MS, undefined, { signal: grace.signal, ref: false }).catch(() => undefined)]);
    grace.abort();
    server.closeAllConnections();
    agent.destroy();
    const current = await readRegistryEntry(regFile).catch(() => undefined);
    if (current !== undefined && current.pid === process.pid && current.url === url) await unlink(regFile).catch(ignoreMissing);
    await unlinkIfOurs(tokenFile, token);
    openHere.delete(regFile);
  };
  return { url, tokenFile, registryFile: regFile, close: () => (closing ??= close()) };
}

/** The job's own token, when it brings one: long enough to guess no better than a random one, and no whitespace. */
function checkJobToken(id: string, token: string): string {
  if (!/^[\x21-\x7e]{32,1024}$/.test(token)) {
    throw new EddyError("INTERNAL", `the token of job '${id}' must be 32 to 1024 printable ASCII characters without spaces`);
  }
  return token;
}

function jobIdInUse(id: string, pid: number): EddyError {
  return new EddyError("JOB_ID_IN_USE", `job id '${id}' is in use by a running job (pid ${pid}); pass --job-id to give this job another id`);
}

/**
 * Makes the job's registry file free: refuses when a live process other than this one holds it
 * (this process's own servers are in `openHere`); removes a stale entry (its process is gone, or
 * it is this process's pid from before) and its token file.
 */
async function claimJobId(dir: string, id: string, logger: Logger): Promise<void> {
  const regFile = join(dir, `${id}.json`);
  const existing = await readRegistryEntry(regFile);
  if (existing === undefined) {
    // Missing, or not a readable entry (another version, damaged): either way not a live claim.
    await unlink(regFile).catch(ignoreMissing);
    return;
  }
  if (existing.pid !== process.pid && isPidAlive(existing.pid)) throw jobIdInUse(id, existing.pid);
  logger.info("replacing the stale registry entry of a job that is gone", { job: id, pid: existing.pid });
  await unlink(regFile).catch(ignoreMissing);
  // Only a token file where this registry keeps them, named for that job and process.
  if (existing.tokenFile === join(dir, `${id}.${existing.pid}.token`)) {
    await unlink(existing.tokenFile).catch(ignoreMissing);
  }
}

/**
 * Writes the registry entry atomically and exclusively: a temporary file, then `link` into place,
 * which fails when another process claimed the id in the meantime.
 */
async function publish(regFile: string, entry: RegistryEntry): Promise<void> {
  const temp = `${regFile}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  await writeExclusive(temp, JSON.stringify(entry) + "\n");
  try {
    await link(temp, regFile);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") {
      throw new EddyError("JOB_ID_IN_USE", `job id '${entry.id}' was just taken by another job; pass --job-id to give this job another id`);
    }
    throw e;
  } finally {
    await unlink(temp).catch(ignoreMissing);
  }
}

/** Creates `file` (mode 0600; fails if it exists) with `text`, flushed to disk. */
async function writeExclusive(file: string, text: string): Promise<void> {
  const handle = await open(file, "wx", 0o600);
  try {
    await handle.writeFile(text, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function unlinkIfOurs(tokenFile: string, token: string): Promise<void> {
  const text = await readFile(tokenFile, "utf8").catch(() => undefined);
  if (text === token) await unlink(tokenFile).catch(ignoreMissing);
}

function ignoreMissing(e: unknown): void {
  if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
}

function controlRoutes(job: ControlledJob): ReadonlyMap<string, Route> {
  const metrics = job.metricsSnapshot?.bind(job);
  return new Map<string, Route>([
    ...(metrics === undefined
      ? []
      : [
          [
            "/metrics",
            {
              method: "GET",
              handle: async () => ({ status: 200, text: prometheusExposition(metrics()), contentType: PROMETHEUS_CONTENT_TYPE }),
            },
          ] as const,
        ]),
    [
      "/v1/job",
      {
        method: "GET",
        handle: async () => ({
          status: 200,
          body: isObservedJob(job)
            ? (jobOverview(job, process.pid, Date.now()) satisfies JobInfo)
            : ({ id: job.id, name: job.name, status: job.status(), pid: process.pid, startedAtMs: job.startedAtMs } satisfies JobInfo),
        }),
      },
    ],
    [
      "/v1/job/savepoint",
      {
        method: "POST",
        handle: async (body) => {
          onlyFields(body, {});
          const result = await job.savepoint();
          return { status: 200, body: { path: result.path, checkpointId: result.checkpointId, bytes: result.bytes } };
        },
      },
    ],
    [
      "/v1/job/stop",
      {
        method: "POST",
        handle: async (body) => {
          onlyFields(body, { savepoint: true, drain: false });
          const savepoint = body.savepoint as boolean;
          const drain = (body.drain as boolean | undefined) ?? false;
          const result = await job.stop({ savepoint, drain });
          return { status: 200, body: { savepoint: result === undefined ? null : { path: result.path, checkpointId: result.checkpointId, bytes: result.bytes } } };
        },
      },
    ],
    [
      "/v1/job/cancel",
      {
        method: "POST",
        handle: async (body) => {
          onlyFields(body, {});
          job.cancel();
          return { status: 202, body: {} };
        },
      },
    ],
  ]);
}

/** A 400 answer, thrown by request validation. */
class BadRequest extends Error {}

/** `{ thread, seconds }` of POST /v1/job/profile: a thread index, and 1..MAX_PROFILE_SECONDS whole seconds. */
function profileRequest(body: Record<string, unknown>): { thread: number; seconds: number } {
  for (const name of Object.keys(body)) if (name !== "thread" && name !== "seconds") throw new BadRequest(`unknown field '${name}' (allowed: thread, seconds)`);
  const { thread, seconds } = body;
  if (typeof thread !== "number" || !Number.isInteger(thread) || thread < 0 || thread > 1_024) throw new BadRequest(`field 'thread' must be a worker thread's index (an integer from 0), got ${JSON.stringify(thread)}`);
  if (typeof seconds !== "number" || !Number.isInteger(seconds) || seconds < 1 || seconds > MAX_PROFILE_SECONDS) {
    throw new BadRequest(`field 'seconds' must be an integer from 1 to ${MAX_PROFILE_SECONDS}, got ${JSON.stringify(seconds)}`);
  }
  return { thread, seconds };
}

/**
 * Checks that `body` has only boolean fields named in `fields` (value: whether required). A field
 * such as `dir` or `path` is refused, so a client cannot choose where the job writes.
 */
function onlyFields(body: Record<string, unknown>, fields: Readonly<Record<string, boolean>>): void {
  for (const [name, value] of Object.entries(body)) {
    if (!(name in fields)) {
      const allowed = Object.keys(fields);
      throw new BadRequest(`unknown field '${name}'${allowed.length === 0 ? ": this request takes an empty object" : ` (allowed: ${allowed.join(", ")})`}`);
    }
    if (typeof value !== "boolean") throw new BadRequest(`field '${name}' must be a boolean, got ${value === null ? "null" : typeof value}`);
  }
  for (const [name, required] of Object.entries(fields)) {
    if (required && !(name in body)) throw new BadRequest(`missing field '${name}' (a boolean)`);
  }
}

/** The bearer token's holder, else a browser with a live UI session, else nobody. */
function callerOf(req: IncomingMessage, token: string, ui: WebUi | undefined): Caller | undefined {
  if (bearerAuthorized(req.headers.authorization, token)) return { kind: "bearer" };
  const session = ui?.session(req);
  return session === undefined ? undefined : { kind: "session", session };
}

async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  caller: Caller | undefined,
  ui: WebUi | undefined,
  routes: Routes,
  logger: Logger,
): Promise<void> {
  if (caller === undefined) {
    sendReply(res, UNAUTHORIZED, true);
    return;
  }
  const path = url.pathname;
  const route = routes.exact.get(path) ?? patternRoute(routes.patterns, path, url.searchParams);
  if (route === undefined) {
    sendReply(res, errorReply(404, "NOT_FOUND", `no endpoint ${path}`), true);
    return;
  }
  if (typeof route === "string") {
    sendReply(res, errorReply(400, "BAD_REQUEST", route), true);
    return;
  }
  if (req.method !== route.method) {
    res.setHeader("Allow", route.method);
    sendReply(res, errorReply(405, "METHOD_NOT_ALLOWED", `${path} takes ${route.method}, not ${req.method}`), true);
    return;
  }
  if (caller.kind === "session" && route.method === "POST") {
    const refused = route.bearerOnly === true ? errorReply(403, "UNAUTHORIZED", `${path} needs the bearer token, not a UI session`) : ui?.refusePost(req, caller);
    if (refused !== undefined) {
      sendReply(res, refused, true);
      return;
    }
  }
  let body: Record<string, unknown> = {};
  if (route.method === "POST") {
    const read = await readBody(req);
    if (typeof read === "number") {
      sendReply(res, read === 413 ? errorReply(413, "BODY_TOO_LARGE", `request body over ${MAX_BODY_BYTES} bytes`) : errorReply(400, "BAD_REQUEST", "request body incomplete"), true);
      return;
    }
    const parsed = parseBody(read);
    if (typeof parsed === "string") {
      sendReply(res, errorReply(400, "BAD_REQUEST", parsed), false);
      return;
    }
    body = parsed;
  }
  let reply: Reply;
  try {
    reply = await route.handle(body, url.searchParams);
  } catch (e) {
    reply = failureReply(e, path, logger);
  }
  sendReply(res, reply, false);
}

/** The route of the first pattern `path` matches, with its URI-decoded segments; a message when one is malformed. */
function patternRoute(patterns: readonly PatternRoute[], path: string, query: URLSearchParams): Route | string | undefined {
  for (const { pattern, handle } of patterns) {
    const match = pattern.exec(path);
    if (match === null) continue;
    let params: string[];
    try {
      params = match.slice(1).map((segment) => decodeURIComponent(segment));
    } catch {
      return `a path segment of ${path} is not valid URI encoding`;
    }
    return { method: "GET", handle: () => handle(params, query) };
  }
  return undefined;
}

function failureReply(e: unknown, path: string, logger: Logger): Reply {
  if (e instanceof BadRequest) return errorReply(400, "BAD_REQUEST", e.message);
  if (e instanceof EddyError) {
    const conflict = e.domain === "user" || e.domain === "config";
    if (!conflict) logger.warn("control request failed in the job", { path, code: e.code, message: e.message });
    return errorReply(conflict ? 409 : 500, e.code, e.message);
  }
  logger.error("control request failed in the job", { path, cause: describeCause(e) });
  return errorReply(500, "INTERNAL", describeCause(e));
}

/** The body as text, or 413 once it exceeds MAX_BODY_BYTES (reading stops), or 400 if the client went away. */
function readBody(req: IncomingMessage): Promise<string | 413 | 400> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > MAX_BODY_BYTES) return Promise.resolve(413);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.off("data", onData);
        req.pause();
        resolve(413);
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("aborted", () => resolve(400));
    req.on("error", () => resolve(400));
  });
}

/** The body as a JSON object (an empty body is `{}`), or a message saying what is wrong. */
function parseBody(text: string): Record<string, unknown> | string {
  if (text.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return `malformed JSON body: ${(e as Error).message}`;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "the body must be a JSON object";
  return value as Record<string, unknown>;
}
