/**
 * The client side of the local control API (control-server.ts): finds running jobs in the registry
 * (control-registry.ts) and calls a job's server with its token. Used by `eddy list / savepoint /
 * stop / cancel / query` and by the queryable-state client (query/client.ts).
 *
 * Stale entries: `listJobs` reports an entry whose process is gone with status "gone" and leaves
 * the file alone (listing never writes); the next server started for that job id replaces it.
 */
import { readdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { describeCause, EddyError, type ErrorDomain } from "../core/errors.ts";
import type { JobStatus, SavepointResult } from "../coordinator/control.ts";
import { answerError } from "../http/http-endpoint.ts";
import { checkJobId, controlHome, isPidAlive, jobsDir, readRegistryEntry, registryFile, type RegistryEntry } from "./control-registry.ts";
import type { JobInfo } from "./control-server.ts";
import type { QueryLocation } from "../queryable/queryable.ts";

/** A job of the registry as `eddy list` shows it. */
export interface JobListing {
  readonly id: string;
  readonly name: string;
  readonly pid: number;
  readonly url: string;
  readonly startedAtMs: number;
  /** Whether the job's process still runs. */
  readonly alive: boolean;
  /** What the job says; "gone" when its process is not running, "unreachable" when it does not answer. */
  readonly status: JobStatus | "gone" | "unreachable";
  /** What the job answered (GET /v1/job) when it runs and answered: its state, throughput, restarts and last checkpoint. */
  readonly info?: JobInfo;
}

export interface ControlClientOptions {
  /** Bound on info and cancel requests, in ms (default 5 s). */
  readonly timeoutMs?: number;
  /** Bound on savepoint and stop requests, which wait for the savepoint, in ms (default 10 min). */
  readonly savepointTimeoutMs?: number;
}

/** A running job, through its control API. */
export interface JobClient {
  readonly id: string;
  info(): Promise<JobInfo>;
  /** Takes a savepoint in the job's own savepoint directory. */
  savepoint(): Promise<SavepointResult>;
  stop(options: { readonly savepoint: boolean; readonly drain: boolean }): Promise<SavepointResult | undefined>;
  cancel(): Promise<void>;
  /** The job's bearer token (its state servers check the same one). */
  readonly token: string;
  /** Where the queryable state `name` lives now; UNKNOWN_STATE when the job has none of that name. */
  stateLocation(name: string): Promise<QueryLocation>;
  /**
   * Reads one key through the control API (GET /v1/jobs/<id>/state/<name>/<key>): `keyArgument`
   * is JSON if it parses as JSON, else a string key. The value is in the wire encoding
   * (encodeQueryValue), not decoded.
   */
  readState(name: string, keyArgument: string): Promise<{ readonly found: boolean; readonly value?: unknown }>;
  /** A one-time login link to the job's web UI (POST /v1/ui/login-link): works once, within a minute. */
  loginLink(): Promise<{ readonly url: string; readonly expiresAtMs: number }>;
}

const DEFAULT_TIMEOUT_MS = 5_000;
const DEFAULT_SAVEPOINT_TIMEOUT_MS = 10 * 60_000;
/** How long `listJobs` waits for each job's status. */
const LIST_TIMEOUT_MS = 2_000;

/** Every job of the registry, oldest first; see the file comment for stale entries. */
export async function listJobs(home?: string): Promise<JobListing[]> {
  const root = controlHome(home);
  const entries = await registryEntries(root);
  const listings = await Promise.all(
    entries.map(async (entry): Promise<JobListing> => {
      const alive = isPidAlive(entry.pid);
      let status: JobListing["status"] = "gone";
      let info: JobInfo | undefined;
      if (alive) {
        info = await clientFor(root, entry, { timeoutMs: LIST_TIMEOUT_MS })
          .then((client) => client.info())
          .catch(() => undefined);
        status = info?.status ?? "unreachable";
      }
      const listing = { id: entry.id, name: entry.name, pid: entry.pid, url: entry.url, startedAtMs: entry.startedAtMs, alive, status };
      return info === undefined ? listing : { ...listing, info };
    }),
  );
  return listings.sort((a, b) => a.startedAtMs - b.startedAtMs || a.id.localeCompare(b.id));
}

/** A client for the running job `jobId`; UNKNOWN_JOB (naming the running ones) when there is none. */
export async function connectJob(jobId: string, home?: string, options: ControlClientOptions = {}): Promise<JobClient> {
  const root = controlHome(home);
  checkJobId(jobId);
  const entry = await readRegistryEntry(registryFile(root, jobId));
  if (entry === undefined || !isPidAlive(entry.pid)) {
    const running = (await registryEntries(root)).filter((e) => isPidAlive(e.pid)).map((e) => e.id);
    const gone = entry === undefined ? "" : ` (it ran as pid ${entry.pid}, which is gone)`;
    throw new EddyError(
      "UNKNOWN_JOB",
      `no running job with id '${jobId}'${gone}; ${running.length === 0 ? "no jobs are running" : `running: ${running.join(", ")}`}`,
    );
  }
  return clientFor(root, entry, options);
}

async function registryEntries(home: string): Promise<RegistryEntry[]> {
  const dir = jobsDir(home);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
  const files = names.filter((n) => n.endsWith(".json"));
  const entries = await Promise.all(files.map((n) => readRegistryEntry(join(dir, n))));
  // An entry must sit in the file named after its id; anything else is not ours to trust.
  return entries.filter((e, i): e is RegistryEntry => e !== undefined && `${e.id}.json` === files[i]);
}

async function clientFor(home: string, entry: RegistryEntry, options: ControlClientOptions): Promise<JobClient> {
  if (!entry.url.startsWith("http://")) throw unreachable(entry, `its registry entry has an unexpected URL '${entry.url}'`);
  // The token file must be beside the entry (the server keeps it there).
  if (dirname(entry.tokenFile) !== jobsDir(home)) {
    throw unreachable(entry, `its token file '${entry.tokenFile}' is not in the registry directory`);
  }
  let token: string;
  try {
    token = (await readFile(entry.tokenFile, "utf8")).trim();
  } catch (e) {
    throw unreachable(entry, `cannot read its token file: ${describeCause(e)}`);
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const savepointTimeoutMs = options.savepointTimeoutMs ?? DEFAULT_SAVEPOINT_TIMEOUT_MS;
  const call = <T>(method: "GET" | "POST", path: string, body: unknown, ms: number): Promise<T> => request<T>(entry, token, method, path, body, ms);
  return {
    id: entry.id,
    info: () => call<JobInfo>("GET", "/v1/job", undefined, timeoutMs),
    savepoint: () => call<SavepointResult>("POST", "/v1/job/savepoint", {}, savepointTimeoutMs),
    stop: async ({ savepoint, drain }) => {
      const reply = await call<{ savepoint: SavepointResult | null }>("POST", "/v1/job/stop", { savepoint, drain }, savepointTimeoutMs);
      return reply.savepoint ?? undefined;
    },
    cancel: async () => {
      await call<unknown>("POST", "/v1/job/cancel", {}, timeoutMs);
    },
    token,
    stateLocation: (name) => call<QueryLocation>("GET", `/v1/job/state/${encodeURIComponent(name)}/location`, undefined, timeoutMs),
    readState: (name, keyArgument) =>
      call("GET", `/v1/jobs/${encodeURIComponent(entry.id)}/state/${encodeURIComponent(name)}/${encodeURIComponent(keyArgument)}`, undefined, timeoutMs),
    loginLink: () => call("POST", "/v1/ui/login-link", {}, timeoutMs),
  };
}

async function request<T>(entry: RegistryEntry, token: string, method: "GET" | "POST", path: string, body: unknown, timeoutMs: number): Promise<T> {
  let res: Response;
  try {
    res = await fetch(entry.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (e) {
    if (e instanceof Error && e.name === "TimeoutError") {
      throw new EddyError("CONTROL_TIMEOUT", `job '${entry.id}' did not answer ${method} ${path} within ${timeoutMs} ms`);
    }
    throw unreachable(entry, describeCause((e as Error).cause ?? e));
  }
  let reply: unknown;
  try {
    reply = await res.json();
  } catch {
    throw unreachable(entry, `${method} ${path} answered ${res.status} with a body that is not JSON`);
  }
  if (res.ok) return reply as T;
  const domain = domainOf(res.status);
  throw answerError(res.status, reply, `${method} ${path} answered ${res.status}`, { domain, retryable: domain === "external" });
}

/** Whose fault a failed request is: 4xx is the request's, 409 the job's state, 5xx the job's. */
function domainOf(status: number): ErrorDomain {
  if (status === 409) return "config";
  if (status >= 400 && status < 500) return "user";
  return "external";
}

function unreachable(entry: RegistryEntry, why: string): EddyError {
  return new EddyError("JOB_UNREACHABLE", `cannot reach job '${entry.id}' (pid ${entry.pid}) at ${entry.url}: ${why}`);
}
