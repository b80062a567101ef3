/**
 * The queryable-state client: reads the latest value of a key of a running job's queryable state.
 *
 * A read finds the job in the registry (control-client.ts), asks its control API once where the
 * state lives (the location, cached per job and state), computes the key's key group and owning
 * subtask as the job does, and GETs the value from that subtask's state server over a keep-alive
 * connection. A location goes stale when the job restarts or moves a subtask: a state server that
 * answers NOT_OWNER, UNKNOWN_STATE or 401, refuses or resets the connection, or a subtask with no
 * server yet, makes the client ask for the location again, once per read, and retry. A location
 * of a newer generation drops every older cached location of the job.
 */
import { Agent } from "node:http";
import { EddyError, type ErrorCode } from "../core/errors.ts";
import type { Key } from "../core/key.ts";
import { connectJob, type JobClient } from "../control/control-client.ts";
import { decodeQueryValue, type QueryAnswer, type QueryLocation } from "../queryable/queryable.ts";
import { answerError } from "../http/http-endpoint.ts";
import { encodeCheckedKey, fetchFromStateServer, locateKey, type StateServerResponse } from "../queryable/state-lookup.ts";

export interface QueryClientOptions {
  /** Where the job registry lives (default: EDDY_HOME, else ~/.eddy). */
  readonly home?: string;
  /** Bound on each request to a job's control API or state server, in ms (default 5 s). */
  readonly timeoutMs?: number;
  /** "latest": the value at some point between two records (the only one so far). */
  readonly consistency?: "latest";
}

export interface QueryClient {
  /** The value of `key` in queryable state `name` of job `jobId`; undefined when the key is absent. */
  get<T = unknown>(jobId: string, name: string, key: Key): Promise<T | undefined>;
  /** The values of `keys`, in their order; reads at most MAX_CONCURRENT_READS at a time, spread over the state servers. */
  getMany<T = unknown>(jobId: string, name: string, keys: readonly Key[]): Promise<(T | undefined)[]>;
  /** Closes the client's connections; later reads fail with CLIENT_CLOSED. May be called twice. */
  close(): void;
}

const DEFAULT_TIMEOUT_MS = 5_000;
/** Reads of one getMany in flight at once (and connections per state server). */
export const MAX_CONCURRENT_READS = 8;

/** Codes of a state server's answer that mean the location is stale. */
const STALE = new Set<ErrorCode>(["NOT_OWNER", "UNKNOWN_STATE", "UNAUTHORIZED", "STATE_SERVER_UNREACHABLE", "NOT_READY"]);

interface CachedLocation {
  readonly promise: Promise<QueryLocation>;
  /** Set once the promise resolved. */
  value?: QueryLocation;
}

export function createQueryClient(options: QueryClientOptions = {}): QueryClient {
  if (options.consistency !== undefined && options.consistency !== "latest") {
    throw new EddyError("UNSUPPORTED_CONSISTENCY", `consistency '${String(options.consistency)}' is not supported (only "latest")`);
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const agent = new Agent({ keepAlive: true, maxSockets: MAX_CONCURRENT_READS });
  /** Per job id, its control client (dropped when it fails, so a restarted process is found again). */
  const jobs = new Map<string, Promise<JobClient>>();
  /** Per `${jobId}/${name}`, the location last asked for. */
  const locations = new Map<string, CachedLocation>();
  /** Per job id, the highest generation of its locations seen. */
  const generations = new Map<string, number>();
  let closed = false;

  const jobClient = (jobId: string): Promise<JobClient> => {
    let client = jobs.get(jobId);
    if (client === undefined) {
      client = connectJob(jobId, options.home, { timeoutMs });
      jobs.set(jobId, client);
      client.catch(() => jobs.get(jobId) === client && jobs.delete(jobId));
    }
    return client;
  };

  const fetchLocation = async (jobId: string, name: string): Promise<QueryLocation> => {
    try {
      return await (await jobClient(jobId)).stateLocation(name);
    } catch (e) {
      if (!(e instanceof EddyError && e.code === "JOB_UNREACHABLE")) throw e;
      // The job's process may have restarted with a new control API: look it up again, once.
      jobs.delete(jobId);
      return (await jobClient(jobId)).stateLocation(name);
    }
  };

  const askLocation = (jobId: string, name: string): CachedLocation => {
    const id = `${jobId}/${name}`;
    const entry: CachedLocation = {
      promise: fetchLocation(jobId, name).then((found) => {
        entry.value = found;
        remember(jobId, found);
        return found;
      }),
    };
    locations.set(id, entry);
    entry.promise.catch(() => locations.get(id) === entry && locations.delete(id));
    return entry;
  };

  /** Notes the generation of a new location; older locations of the job are stale. */
  const remember = (jobId: string, location: QueryLocation): void => {
    if (location.generation <= (generations.get(jobId) ?? -1)) return;
    generations.set(jobId, location.generation);
    for (const [id, entry] of locations) {
      if (id.startsWith(`${jobId}/`) && entry.value !== undefined && entry.value.generation < location.generation) locations.delete(id);
    }
  };

  const location = (jobId: string, name: string): Promise<QueryLocation> => (locations.get(`${jobId}/${name}`) ?? askLocation(jobId, name)).promise;

  /** A newer location than `stale`: the cached one if another read refreshed it already, else asked anew. */
  const refresh = (jobId: string, name: string, stale: QueryLocation): Promise<QueryLocation> => {
    const cached = locations.get(`${jobId}/${name}`);
    if (cached !== undefined && cached.value !== stale) return cached.promise;
    // The token may have changed with the job's process, too.
    jobs.delete(jobId);
    return askLocation(jobId, name).promise;
  };

  const read = async (jobId: string, name: string, key: Key, keyText: string, at: QueryLocation, retried: boolean): Promise<unknown> => {
    const failure = await readAt(jobId, name, key, keyText, at);
    if (!(failure instanceof EddyError)) return failure.found ? failure.value : undefined;
    if (retried || !STALE.has(failure.code)) throw failure;
    return read(jobId, name, key, keyText, await refresh(jobId, name, at), true);
  };

  /** The answer of the server owning `key` under `at`, or the failure (thrown only when it is not a stale location). */
  const readAt = async (jobId: string, name: string, key: Key, keyText: string, at: QueryLocation): Promise<QueryAnswer | EddyError> => {
    const { subtask, server } = locateKey(at, key);
    if (server === undefined) {
      return new EddyError("NOT_READY", `subtask ${subtask} of '${at.operatorName}' has no state server yet (job '${jobId}' is starting or restarting); retry`);
    }
    const { token } = await jobClient(jobId);
    let response: StateServerResponse;
    try {
      response = await fetchFromStateServer(server, token, name, keyText, { agent, timeoutMs });
    } catch (e) {
      if (e instanceof EddyError && e.code === "STATE_SERVER_UNREACHABLE") return e;
      throw e;
    }
    return response.status === 200 ? (decodeQueryValue(response.text) as QueryAnswer) : stateServerError(response, server);
  };

  const checkOpen = (): void => {
    if (closed) throw new EddyError("CLIENT_CLOSED", "the query client is closed");
  };

  return {
    async get<T>(jobId: string, name: string, key: Key): Promise<T | undefined> {
      checkOpen();
      const keyText = encodeCheckedKey(key);
      return (await read(jobId, name, key, keyText, await location(jobId, name), false)) as T | undefined;
    },
    async getMany<T>(jobId: string, name: string, keys: readonly Key[]): Promise<(T | undefined)[]> {
      checkOpen();
      const texts = keys.map(encodeCheckedKey);
      if (keys.length === 0) return [];
      const first = await location(jobId, name);
      const order = interleaveByServer(keys.map((k) => locateKey(first, k).server ?? ""));
      const values = new Array<T | undefined>(keys.length);
      let next = 0;
      let failed = false;
      const worker = async (): Promise<void> => {
        while (!failed && next < order.length) {
          const i = order[next++]!;
          try {
            // The cached location, which another read of the batch may have refreshed already.
            values[i] = (await read(jobId, name, keys[i]!, texts[i]!, await location(jobId, name), false)) as T | undefined;
          } catch (e) {
            failed = true;
            throw e;
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(MAX_CONCURRENT_READS, keys.length) }, worker));
      return values;
    },
    close() {
      closed = true;
      agent.destroy();
      jobs.clear();
      locations.clear();
    },
  };
}

/** Indices of `servers` taking one of each server in turn, so concurrent reads spread over the servers. */
function interleaveByServer(servers: readonly string[]): number[] {
  const groups = new Map<string, number[]>();
  servers.forEach((s, i) => {
    const group = groups.get(s);
    if (group === undefined) groups.set(s, [i]);
    else group.push(i);
  });
  const order: number[] = [];
  const lists = [...groups.values()];
  for (let round = 0; order.length < servers.length; round++) {
    for (const list of lists) if (round < list.length) order.push(list[round]!);
  }
  return order;
}

/** A state server's error answer as an EddyError with its code. */
function stateServerError(response: StateServerResponse, server: string): EddyError {
  let body: unknown;
  try {
    body = JSON.parse(response.text);
  } catch {
    // Not JSON: the status says enough.
  }
  const failed = response.status >= 500;
  return answerError(response.status, body, `the state server at ${server} answered ${response.status}`, { domain: failed ? "external" : "user", retryable: failed });
}
