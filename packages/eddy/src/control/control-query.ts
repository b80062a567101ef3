/**
 * The queryable-state endpoints of the control API (control-server.ts), served when the job is a
 * QueryableJob:
 *   GET /v1/job/state                      → 200 { states: QueryLocation[] }
 *   GET /v1/job/state/<name>/location      → 200 QueryLocation | 404 UNKNOWN_STATE
 *   GET /v1/jobs/<id>/state/<name>/<key>   → the owning state server's answer, status and body as it
 *     sent them (200 { found, value } | 4xx/5xx { error }); 404 UNKNOWN_JOB (another id),
 *     404 UNKNOWN_STATE, 400 BAD_KEY, 503 NOT_READY (the subtask has no state server yet),
 *     502 STATE_SERVER_UNREACHABLE, 504 STATE_SERVER_TIMEOUT.
 * <key> is one URI-encoded path segment, read by parseKeyArgument (JSON if it parses, else a string).
 * The location is asked of the job on every read: this path is for people and scripts; the
 * TypeScript client (query/client.ts) caches locations and reads from state servers itself.
 */
import type { Agent } from "node:http";
import { EddyError } from "../core/errors.ts";
import { errorReply, type Reply } from "../http/http-endpoint.ts";
import type { QueryableJob, QueryLocation } from "../queryable/queryable.ts";
import { encodeCheckedKey, fetchFromStateServer, locateKey, parseKeyArgument } from "../queryable/state-lookup.ts";

/** How long a proxied read waits for the state server (below the control client's default timeout, so it answers 504 first). */
export const PROXY_TIMEOUT_MS = 4_000;

/** A GET endpoint whose path matches `pattern`; `handle` gets the URI-decoded capture groups and the query. */
export interface PatternRoute {
  readonly pattern: RegExp;
  readonly handle: (params: readonly string[], query: URLSearchParams) => Promise<Reply>;
}

export function queryRoutes(job: QueryableJob & { readonly id: string }, agent: Agent): PatternRoute[] {
  return [
    { pattern: /^\/v1\/job\/state$/, handle: async () => ({ status: 200, body: { states: job.queryableStates() } }) },
    {
      pattern: /^\/v1\/job\/state\/([^/]+)\/location$/,
      handle: async ([name]) => {
        const location = find(job, name!);
        return typeof location === "string" ? unknownState(location) : { status: 200, body: location };
      },
    },
    {
      pattern: /^\/v1\/jobs\/([^/]+)\/state\/([^/]+)\/([^/]+)$/,
      handle: async ([id, name, keyArgument]) => {
        if (id !== job.id) return errorReply(404, "UNKNOWN_JOB", `this is job '${job.id}', not '${id}'`);
        const location = find(job, name!);
        if (typeof location === "string") return unknownState(location);
        let keyText: string;
        let server: string | undefined;
        let subtask: number;
        try {
          const key = parseKeyArgument(keyArgument!);
          keyText = encodeCheckedKey(key);
          ({ server, subtask } = locateKey(location, key));
        } catch (e) {
          if (e instanceof EddyError && e.code === "BAD_KEY") return errorReply(400, e.code, e.message);
          throw e;
        }
        if (server === undefined) {
          return errorReply(503, "NOT_READY", `subtask ${subtask} of '${location.operatorName}' has no state server yet (the job is starting or restarting); retry`);
        }
        try {
          const answer = await fetchFromStateServer(server, job.token, location.name, keyText, { agent, timeoutMs: PROXY_TIMEOUT_MS });
          return { status: answer.status, json: answer.text };
        } catch (e) {
          if (e instanceof EddyError && e.code === "STATE_SERVER_TIMEOUT") return errorReply(504, e.code, e.message);
          if (e instanceof EddyError && e.code === "STATE_SERVER_UNREACHABLE") return errorReply(502, e.code, e.message);
          throw e;
        }
      },
    },
  ];
}

/** The location of `name`, or the names there are (for the error). */
function find(job: QueryableJob, name: string): QueryLocation | string {
  const states = job.queryableStates();
  return states.find((s) => s.name === name) ?? `no queryable state '${name}' in this job (${states.length === 0 ? "it has none yet" : `it has: ${states.map((s) => s.name).join(", ")}`})`;
}

function unknownState(message: string): Reply {
  return errorReply(404, "UNKNOWN_STATE", message);
}
