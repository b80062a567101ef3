/**
 * The JSON answers of the REST API's read endpoints (rest-api.ts; docs/rest-api.md shows each),
 * made from what the job keeps: its plan, a metrics snapshot, checkpoint statistics, its failures.
 * Pure functions: no I/O, no clock (times are passed in), so each shape is tested without a job.
 *
 * Conventions, the same in every answer: times are wall-clock ms since the epoch (`…Ms` fields
 * that are instants) or durations in ms; sizes in bytes; a value that is not known is `null`,
 * never absent. A vertex is a task (an operator chain: Flink's JobVertex), its id the chain's
 * index in the plan as a string, the `<vertex>` of the task ids `<vertex>.<subtask>`. A watermark
 * is a number, or "none" before the first one, or "end" once the input has ended.
 */
import type { CheckpointStats } from "../checkpoint/coordinator.ts";
import type { JobException } from "../coordinator/exception-history.ts";
import type { JobMetricsSnapshot, OperatorMetricsSnapshot, TaskMetricsSnapshot } from "../coordinator/job-metrics.ts";
import type { PlanChain, PlanEdge, PlanNode, Plan } from "../graph/plan.ts";
import { MAX_WATERMARK, MIN_WATERMARK } from "../core/time.ts";

export type WatermarkValue = number | "none" | "end" | null;

/** A watermark as the API says it (see the file comment); null when not measured. */
export function watermarkValue(w: number): WatermarkValue {
  if (Number.isNaN(w)) return null;
  if (w <= MIN_WATERMARK) return "none";
  if (w >= MAX_WATERMARK) return "end";
  return w;
}

/** A measured number, or null when it was not measured (NaN). */
function measured(n: number): number | null {
  return Number.isNaN(n) ? null : n;
}

export function vertexId(chain: PlanChain): string {
  return String(chain.index);
}

/** Flink's names for the ways records go from one operator to the next. */
export function partitionerName(edge: PlanEdge): "forward" | "rebalance" | "rescale" | "broadcast" | "hash" | "custom" {
  const type = edge.partitioner.type;
  return type === "key-group" ? "hash" : type;
}

function operatorView(node: PlanNode) {
  return {
    id: node.operatorId,
    name: node.name,
    /** What its metrics are labelled with (unique in the job). */
    metricName: node.metricName,
    uid: node.transformation.uid ?? null,
    parallelism: node.parallelism,
    maxParallelism: node.maxParallelism,
  };
}

function vertexView(chain: PlanChain) {
  return {
    id: vertexId(chain),
    name: chain.name,
    parallelism: chain.parallelism,
    maxParallelism: Math.min(...chain.nodes.map((n) => n.maxParallelism)),
    operators: chain.nodes.map(operatorView),
  };
}

/** `GET /v1/job/vertices`: the tasks with their chained operators, and every edge of the plan. */
export function jobGraphView(plan: Plan) {
  const vertexOf = new Map<PlanNode, string>();
  for (const chain of plan.chains) for (const node of chain.nodes) vertexOf.set(node, vertexId(chain));
  return {
    vertices: plan.chains.map(vertexView),
    edges: plan.nodes.flatMap((node) =>
      node.outputs.map((e) => ({
        from: vertexOf.get(e.source)!,
        to: vertexOf.get(e.target)!,
        fromOperator: e.source.operatorId,
        toOperator: e.target.operatorId,
        partitioner: partitionerName(e),
        /** Within one task, by direct calls (then from === to). */
        chained: e.chained,
        /** The second input of a two-input operator is 1. */
        inputIndex: e.inputIndex,
        sideOutput: e.sideTag ?? null,
      })),
    ),
  };
}

/**
 * The metrics of `chain`'s subtasks, by subtask (a subtask not reported yet is missing). Matched
 * by the chain's name and its head's metric name: two chains may have one name (two unnamed
 * print sinks), never one head (metric names are unique in the plan).
 */
function subtaskMetrics(chain: PlanChain, metrics: JobMetricsSnapshot): Map<number, TaskMetricsSnapshot> {
  const out = new Map<number, TaskMetricsSnapshot>();
  const vertex = vertexId(chain);
  for (const t of metrics.tasks) {
    if (t.vertex === vertex && t.subtask < chain.parallelism) out.set(t.subtask, t);
  }
  return out;
}

function operatorMetricsView(node: PlanNode, o: OperatorMetricsSnapshot | undefined) {
  return {
    id: node.operatorId,
    name: node.name,
    numRecordsIn: o?.numRecordsIn ?? null,
    numRecordsOut: o?.numRecordsOut ?? null,
    numRecordsInPerSecond: o === undefined ? null : measured(o.numRecordsInPerSecond),
    numRecordsOutPerSecond: o === undefined ? null : measured(o.numRecordsOutPerSecond),
    currentInputWatermark: o === undefined ? null : watermarkValue(o.currentInputWatermark),
    currentOutputWatermark: o === undefined ? null : watermarkValue(o.currentOutputWatermark),
    watermarkLagMs: o === undefined ? null : measured(o.watermarkLag),
    /** Bytes of its state in the newest completed checkpoint; null before one. */
    stateSizeBytes: o === undefined ? null : measured(o.stateSize),
    /** A source's sourceIdleTime (ms), pendingRecords and pendingBytes, the watermarkAlignmentDrift (ms) of an aligned source's Timestamps/Watermarks; null where not measured. */
    gauges: Object.fromEntries(Object.entries(o?.gauges ?? {}).map(([name, v]) => [name, measured(v)])),
    counters: o?.counters ?? {},
  };
}

/** `GET /v1/job/vertices/:id`: the vertex and each subtask's metrics (null before its first report). */
export function vertexDetailView(chain: PlanChain, metrics: JobMetricsSnapshot) {
  const bySubtask = subtaskMetrics(chain, metrics);
  return {
    ...vertexView(chain),
    subtasks: Array.from({ length: chain.parallelism }, (_, subtask) => {
      const t = bySubtask.get(subtask);
      return {
        subtask,
        reported: t !== undefined,
        busyTimeMsPerSecond: t === undefined ? null : measured(t.busyTimeMsPerSecond),
        idleTimeMsPerSecond: t === undefined ? null : measured(t.idleTimeMsPerSecond),
        backPressuredTimeMsPerSecond: t === undefined ? null : measured(t.backPressuredTimeMsPerSecond),
        numBytesIn: t?.numBytesIn ?? null,
        numBytesOut: t?.numBytesOut ?? null,
        operators: chain.nodes.map((node) => operatorMetricsView(node, t?.operators.find((o) => o.operator === node.metricName))),
      };
    }),
  };
}

/**
 * The job's throughput for the overview (and `eddy list`): records the sources emitted and the
 * sinks took per second, Flink's one-minute meters summed over subtasks; null until measured (or
 * with per-record metrics off).
 */
export function throughputView(plan: Plan, metrics: JobMetricsSnapshot): { recordsInPerSecond: number | null; recordsOutPerSecond: number | null } {
  const sources = new Set(plan.nodes.filter((n) => n.transformation.kind === "source").map((n) => n.metricName));
  const sinks = new Set(plan.nodes.filter((n) => n.outputs.length === 0).map((n) => n.metricName));
  let recordsIn = 0;
  let recordsOut = 0;
  let seenIn = false;
  let seenOut = false;
  for (const t of metrics.tasks) {
    for (const o of t.operators) {
      if (sources.has(o.operator) && !Number.isNaN(o.numRecordsOutPerSecond)) [recordsIn, seenIn] = [recordsIn + o.numRecordsOutPerSecond, true];
      if (sinks.has(o.operator) && !Number.isNaN(o.numRecordsInPerSecond)) [recordsOut, seenOut] = [recordsOut + o.numRecordsInPerSecond, true];
    }
  }
  return { recordsInPerSecond: seenIn ? recordsIn : null, recordsOutPerSecond: seenOut ? recordsOut : null };
}

/** `GET /v1/job/watermarks`: per vertex and subtask, the head's input and the tail's output watermark. */
export function watermarksView(plan: Plan, metrics: JobMetricsSnapshot) {
  return {
    vertices: plan.chains.map((chain) => {
      const bySubtask = subtaskMetrics(chain, metrics);
      const head = chain.nodes[0]!;
      const tail = chain.nodes.at(-1)!;
      const subtasks = Array.from({ length: chain.parallelism }, (_, subtask) => {
        const operators = bySubtask.get(subtask)?.operators;
        const first = operators?.find((o) => o.operator === head.metricName);
        const last = operators?.find((o) => o.operator === tail.metricName);
        return {
          subtask,
          inputWatermark: first === undefined ? null : watermarkValue(first.currentInputWatermark),
          outputWatermark: last === undefined ? null : watermarkValue(last.currentOutputWatermark),
          watermarkLagMs: last === undefined ? null : measured(last.watermarkLag),
        };
      });
      return { id: vertexId(chain), name: chain.name, lowInputWatermark: lowest(subtasks.map((s) => s.inputWatermark)), subtasks };
    }),
  };
}

/** The lowest of the subtasks' watermarks (what the vertex has passed); null if one is unknown. */
function lowest(values: readonly WatermarkValue[]): WatermarkValue {
  if (values.length === 0 || values.some((v) => v === null)) return null;
  if (values.includes("none")) return "none";
  const numbers = values.filter((v): v is number => typeof v === "number");
  return numbers.length === 0 ? "end" : Math.min(...numbers);
}

/** Flink's thresholds on backPressuredTimeMsPerSecond / 1000: at most 0.1 ok, at most 0.5 low, else high. */
export const BACKPRESSURE_LOW_RATIO = 0.1;
export const BACKPRESSURE_HIGH_RATIO = 0.5;
export type BackpressureLevel = "ok" | "low" | "high" | "unknown";

export function backpressureLevel(ratio: number | null): BackpressureLevel {
  if (ratio === null) return "unknown";
  return ratio <= BACKPRESSURE_LOW_RATIO ? "ok" : ratio <= BACKPRESSURE_HIGH_RATIO ? "low" : "high";
}

const LEVEL_ORDER: readonly BackpressureLevel[] = ["unknown", "ok", "low", "high"];

/** The worse of two levels ("unknown" is the mildest: any measured level wins over it). */
export function worseLevel(a: BackpressureLevel, b: BackpressureLevel): BackpressureLevel {
  return LEVEL_ORDER.indexOf(b) > LEVEL_ORDER.indexOf(a) ? b : a;
}

/** `GET /v1/job/backpressure`: per vertex and subtask, the share of time backpressured, busy and idle, and the level. */
export function backpressureView(plan: Plan, metrics: JobMetricsSnapshot) {
  const ratio = (msPerSecond: number | undefined): number | null =>
    msPerSecond === undefined || Number.isNaN(msPerSecond) ? null : Math.min(1, Math.max(0, msPerSecond / 1_000));
  return {
    judgedBy:
      "backPressuredTimeMsPerSecond / 1000 over the last minute: ok up to 0.1, low up to 0.5, high above (Flink's thresholds); a vertex is its worst subtask",
    vertices: plan.chains.map((chain) => {
      const bySubtask = subtaskMetrics(chain, metrics);
      const subtasks = Array.from({ length: chain.parallelism }, (_, subtask) => {
        const t = bySubtask.get(subtask);
        const backPressuredRatio = ratio(t?.backPressuredTimeMsPerSecond);
        return { subtask, level: backpressureLevel(backPressuredRatio), backPressuredRatio, busyRatio: ratio(t?.busyTimeMsPerSecond), idleRatio: ratio(t?.idleTimeMsPerSecond) };
      });
      const level = subtasks.reduce<BackpressureLevel>((worst, s) => worseLevel(worst, s.level), "unknown");
      return { id: vertexId(chain), name: chain.name, level, subtasks };
    }),
  };
}

/** One checkpoint in a list: without the per-subtask details. */
export function checkpointSummary(c: CheckpointStats) {
  return {
    id: c.checkpointId,
    status: c.status,
    isSavepoint: c.isSavepoint,
    triggerTimeMs: c.triggerTimeMs,
    durationMs: c.durationMs ?? null,
    acknowledgedSubtasks: c.acknowledgedTasks,
    totalSubtasks: c.totalTasks,
    sizeBytes: c.bytes,
    /** Maxima over the subtasks. */
    syncMs: c.syncMs,
    asyncMs: c.asyncMs,
    alignmentMs: c.alignmentMs,
    failureReason: c.failureReason ?? null,
  };
}

/** `GET /v1/job/checkpoints/:id`: the summary and what each subtask reported, by vertex and subtask. */
export function checkpointDetailView(c: CheckpointStats) {
  return {
    ...checkpointSummary(c),
    subtasks: c.subtasks.map((s) => {
      const dot = s.taskId.lastIndexOf(".");
      return {
        vertex: s.taskId.slice(0, dot),
        subtask: Number(s.taskId.slice(dot + 1)),
        ackTimeMs: s.ackTimeMs,
        /** From the trigger to this subtask's acknowledgement. */
        endToEndMs: s.ackTimeMs - c.triggerTimeMs,
        syncMs: s.syncMs,
        asyncMs: s.asyncMs,
        alignmentMs: s.alignmentMs,
        sizeBytes: s.bytes,
        /** Bytes of each operator's state in the subtask's snapshot, by operator id (before the file's framing). */
        operatorSizeBytes: s.operatorBytes,
      };
    }),
  };
}

/**
 * `GET /v1/job/checkpoints`: counts (over every attempt), the latest completed, failed and
 * savepoint, and the newest `limit` of the kept history, newest first.
 */
export function checkpointsView(history: readonly CheckpointStats[], counts: { completed: number; failed: number } | undefined, limit: number) {
  const newestFirst = [...history].reverse();
  const latest = (f: (c: CheckpointStats) => boolean) => {
    const found = newestFirst.find(f);
    return found === undefined ? null : checkpointSummary(found);
  };
  return {
    enabled: counts !== undefined,
    counts: {
      completed: counts?.completed ?? 0,
      failed: counts?.failed ?? 0,
      inProgress: history.filter((c) => c.status === "in-progress").length,
    },
    latest: {
      completed: latest((c) => c.status === "completed" && !c.isSavepoint),
      savepoint: latest((c) => c.status === "completed" && c.isSavepoint),
      failed: latest((c) => c.status === "failed"),
    },
    /** How many the job keeps (the history below shows the newest `limit` of them). */
    kept: history.length,
    history: newestFirst.slice(0, limit).map(checkpointSummary),
  };
}

function exceptionView(e: JobException) {
  return {
    timeMs: e.timeMs,
    attempt: e.attempt,
    code: e.code ?? null,
    message: e.message,
    rootCause: e.rootCause ?? null,
    operator: e.operator ?? null,
    subtask: e.subtask ?? null,
    location: e.location ?? null,
    stack: e.stack ?? null,
    stackTruncated: e.stackTruncated,
    restarted: e.restarted,
  };
}

/**
 * `GET /v1/job/exceptions`: the newest failure first (the one that ended the job, when it failed)
 * as `rootException`, then the newest `limit` failures kept, newest first.
 */
export function exceptionsView(exceptions: { readonly total: number; readonly newestFirst: readonly JobException[] }, limit: number) {
  const first = exceptions.newestFirst[0];
  return {
    total: exceptions.total,
    /** Whether failures were left out: older than the kept ones, or beyond `limit`. */
    truncated: exceptions.total > Math.min(limit, exceptions.newestFirst.length),
    rootException: first === undefined ? null : exceptionView(first),
    history: exceptions.newestFirst.slice(0, limit).map(exceptionView),
  };
}

/** The sum of the numbers, or null when there are none (no subtask reported). */
function sumOrNull(values: readonly (number | null)[]): number | null {
  const numbers = values.filter((v): v is number => v !== null);
  return numbers.length === 0 ? null : numbers.reduce((a, b) => a + b, 0);
}

/**
 * What the web UI's live stream (`GET /v1/job/events`) sends about each vertex about once a
 * second: records into its head operator and out of its tail operator (totals and per second,
 * summed over its subtasks), its busy / backpressured / idle share (its worst subtask's, as Flink
 * colours a vertex) with the backpressure level, and its lowest input and output watermarks.
 */
export function liveVerticesView(plan: Plan, metrics: JobMetricsSnapshot) {
  const backpressure = backpressureView(plan, metrics).vertices;
  const watermarks = watermarksView(plan, metrics).vertices;
  return plan.chains.map((chain, i) => {
    const detail = vertexDetailView(chain, metrics);
    const head = detail.subtasks.map((s) => s.operators[0]!);
    const tail = detail.subtasks.map((s) => s.operators.at(-1)!);
    const bp = backpressure[i]!;
    const worst = (f: (s: (typeof bp.subtasks)[number]) => number | null): number | null => {
      const values = bp.subtasks.map(f).filter((v): v is number => v !== null);
      return values.length === 0 ? null : Math.max(...values);
    };
    return {
      id: detail.id,
      name: detail.name,
      parallelism: detail.parallelism,
      numRecordsIn: sumOrNull(head.map((o) => o.numRecordsIn)),
      numRecordsOut: sumOrNull(tail.map((o) => o.numRecordsOut)),
      numRecordsInPerSecond: sumOrNull(head.map((o) => o.numRecordsInPerSecond)),
      numRecordsOutPerSecond: sumOrNull(tail.map((o) => o.numRecordsOutPerSecond)),
      busyRatio: worst((s) => s.busyRatio),
      backPressuredRatio: worst((s) => s.backPressuredRatio),
      idleRatio: worst((s) => s.idleRatio),
      backpressureLevel: bp.level,
      inputWatermark: watermarks[i]!.lowInputWatermark,
      outputWatermark: lowest(watermarks[i]!.subtasks.map((s) => s.outputWatermark)),
    };
  });
}
