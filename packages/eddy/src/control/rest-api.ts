/**
 * The read endpoints of the REST API (Flink's REST API in spirit, versioned under /v1), served by
 * the control server (control-server.ts, which checks the token and bounds every request) when
 * the job is an ObservedJob, as every job startJob returns is:
 *
 *   GET /v1/job                       → the overview (JobOverview)
 *   GET /v1/job/vertices              → the job graph: tasks, their operators, the edges
 *   GET /v1/job/vertices/<id>         → one task with its subtasks' metrics (404 UNKNOWN_VERTEX)
 *   GET /v1/job/watermarks            → per task and subtask
 *   GET /v1/job/backpressure          → per task and subtask, with Flink's levels
 *   GET /v1/job/checkpoints[?limit=n] → counts, latest, history newest first (n: 1..100, default 20)
 *   GET /v1/job/checkpoints/<id>      → one, with its subtasks (400 BAD_REQUEST for a non-integer,
 *                                       404 UNKNOWN_CHECKPOINT for one not kept)
 *   GET /v1/job/exceptions[?limit=n]  → failures and restarts, newest first (n: 1..32, default 32)
 *   GET /v1/job/config                → the effective configuration keys
 *
 * docs/rest-api.md shows each answer; rest-views.ts makes them. A query parameter an endpoint
 * does not take is 400, not ignored, so a typo does not look like a working request.
 *
 * Bounds: every answer is made from bounded memory (the plan; one metrics entry per operator and
 * subtask; STATS_HISTORY checkpoints with one entry per subtask; MAX_EXCEPTIONS failures with
 * stacks of at most MAX_STACK_CHARS), so its size grows with the job's operators × subtasks, not
 * with how long it runs. Nothing here asks the tasks: it reads what the coordinator holds.
 */
import { MAX_EXCEPTIONS } from "../coordinator/exception-history.ts";
import type { ObservedJob } from "../coordinator/control.ts";
import { STATS_HISTORY } from "../checkpoint/coordinator.ts";
import { errorReply, type Reply } from "../http/http-endpoint.ts";
import type { PatternRoute } from "./control-query.ts";
import {
  backpressureView,
  checkpointDetailView,
  checkpointsView,
  checkpointSummary,
  exceptionsView,
  jobGraphView,
  throughputView,
  vertexDetailView,
  vertexId,
  watermarksView,
} from "./rest-views.ts";

/** A GET endpoint at an exact path. */
export type ExactGet = (query: URLSearchParams) => Promise<Reply>;

export const DEFAULT_CHECKPOINT_LIMIT = 20;

/** What `GET /v1/job` answers for a job that is observed: the JobInfo fields, and more. */
export function jobOverview(job: ObservedJob, pid: number, nowMs: number) {
  const { plan } = job;
  const counts = job.checkpointCounts();
  const history = job.checkpointHistory();
  let lastCompleted;
  for (let i = history.length - 1; i >= 0 && lastCompleted === undefined; i--) {
    if (history[i]!.status === "completed" && !history[i]!.isSavepoint) lastCompleted = history[i];
  }
  return {
    id: job.id,
    name: job.name,
    /** As before (JobInfo): running, stopping, finished, stopped, failed, cancelled. */
    status: job.status(),
    /** The status, or "restarting" between a failure and the attempt that recovers from it. */
    state: job.state(),
    pid,
    startedAtMs: job.startedAtMs,
    endedAtMs: job.endedAtMs ?? null,
    durationMs: (job.endedAtMs ?? nowMs) - job.startedAtMs,
    parallelism: Math.max(1, ...plan.chains.map((c) => c.parallelism)),
    vertices: plan.chains.length,
    operators: plan.nodes.length,
    subtasks: plan.chains.reduce((n, c) => n + c.parallelism, 0),
    restarts: job.restarts,
    throughput: throughputView(plan, job.metricsSnapshot()),
    checkpoints:
      counts === undefined
        ? null
        : { completed: counts.completed, failed: counts.failed, lastCompleted: lastCompleted === undefined ? null : checkpointSummary(lastCompleted) },
  };
}

/** The read endpoints but `/v1/job` (which control-server.ts serves for every job). */
export function restRoutes(job: ObservedJob): { exact: Map<string, ExactGet>; patterns: PatternRoute[] } {
  const chainOf = (id: string) => job.plan.chains.find((c) => vertexId(c) === id);
  const exact = new Map<string, ExactGet>([
    ["/v1/job/vertices", async (q) => noParameters(q) ?? ok({ id: job.id, ...jobGraphView(job.plan) })],
    ["/v1/job/watermarks", async (q) => noParameters(q) ?? ok(watermarksView(job.plan, job.metricsSnapshot()))],
    ["/v1/job/backpressure", async (q) => noParameters(q) ?? ok(backpressureView(job.plan, job.metricsSnapshot()))],
    [
      "/v1/job/checkpoints",
      async (q) => {
        const limit = limitParameter(q, STATS_HISTORY, DEFAULT_CHECKPOINT_LIMIT);
        return typeof limit === "number" ? ok(checkpointsView(job.checkpointHistory(), job.checkpointCounts(), limit)) : limit;
      },
    ],
    [
      "/v1/job/exceptions",
      async (q) => {
        const limit = limitParameter(q, MAX_EXCEPTIONS, MAX_EXCEPTIONS);
        return typeof limit === "number" ? ok(exceptionsView(job.exceptions(), limit)) : limit;
      },
    ],
    ["/v1/job/config", async (q) => noParameters(q) ?? ok({ id: job.id, name: job.name, entries: Object.entries(job.configuration()).map(([key, value]) => ({ key, value })) })],
  ]);
  const patterns: PatternRoute[] = [
    {
      pattern: /^\/v1\/job\/vertices\/([^/]+)$/,
      handle: async ([id], q) => {
        const bad = noParameters(q);
        if (bad !== undefined) return bad;
        const chain = chainOf(id!);
        if (chain === undefined) return errorReply(404, "UNKNOWN_VERTEX", `job '${job.id}' has no vertex '${id}' (its vertices: ${job.plan.chains.map(vertexId).join(", ")})`);
        return ok(vertexDetailView(chain, job.metricsSnapshot()));
      },
    },
    {
      pattern: /^\/v1\/job\/checkpoints\/([^/]+)$/,
      handle: async ([id], q) => {
        const bad = noParameters(q);
        if (bad !== undefined) return bad;
        if (!/^(0|[1-9][0-9]{0,15})$/.test(id!)) return errorReply(400, "BAD_REQUEST", `a checkpoint id is a non-negative integer, got '${id}'`);
        const found = job.checkpointHistory().find((c) => c.checkpointId === Number(id));
        if (found === undefined) return errorReply(404, "UNKNOWN_CHECKPOINT", `job '${job.id}' keeps no statistics of checkpoint ${id} (it keeps the newest ${STATS_HISTORY})`);
        return ok(checkpointDetailView(found));
      },
    },
  ];
  return { exact, patterns };
}

function ok(body: unknown): Reply {
  return { status: 200, body };
}

/** 400 when the query has any parameter. */
function noParameters(query: URLSearchParams | undefined): Reply | undefined {
  const names = query === undefined ? [] : [...new Set(query.keys())];
  return names.length === 0 ? undefined : errorReply(400, "BAD_REQUEST", `unknown query parameter '${names[0]}': this endpoint takes none`);
}

/** `limit` (an integer 1..max, default `byDefault`), or a 400 answer for it or any other parameter. */
function limitParameter(query: URLSearchParams | undefined, max: number, byDefault: number): number | Reply {
  if (query === undefined) return byDefault;
  for (const name of query.keys()) {
    if (name !== "limit") return errorReply(400, "BAD_REQUEST", `unknown query parameter '${name}' (allowed: limit)`);
  }
  const values = query.getAll("limit");
  if (values.length === 0) return byDefault;
  if (values.length > 1 || !/^[1-9][0-9]{0,5}$/.test(values[0]!) || Number(values[0]) > max) {
    return errorReply(400, "BAD_REQUEST", `limit must be one integer from 1 to ${max}, got '${values.join("', '")}'`);
  }
  return Number(values[0]);
}
