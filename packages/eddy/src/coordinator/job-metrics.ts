/**
 * The job's metrics registry, on the coordinator: the latest SubtaskMetrics of every task (the
 * workers report them every metrics interval; inline, the executor is read directly), the job's
 * checkpoint and restart counts, and the meters that turn counts into rates per second
 * (MeterView). `snapshot()` gives them scoped job → task → operator → subtask, with Flink's
 * names; the Prometheus endpoint (control/prometheus-exposition.ts) renders that.
 *
 * Bounds: one MeterView per (task, subtask, operator, rate) and per user meter; a view of a
 * subtask that no longer reports is dropped at the next snapshot, so the views never outnumber
 * the series of the last snapshot.
 */
import type { CheckpointCounts, CheckpointStats } from "../checkpoint/coordinator.ts";
import { MAX_WATERMARK, MIN_WATERMARK } from "../core/time.ts";
import type { UserMetricSample } from "../runtime/metrics/metric-group.ts";
import type { SubtaskMetrics } from "../runtime/stream-task.ts";
import { MeterView } from "./meter-view.ts";

/** What the registry reads from the job when it samples or snapshots. */
export interface JobMetricsSource {
  readonly jobName: string;
  metrics(): SubtaskMetrics[];
  readonly restarts: number;
  /** undefined: the job runs without checkpointing. */
  checkpointCounts(): CheckpointCounts | undefined;
  lastCompletedCheckpoint(): CheckpointStats | undefined;
}

export interface JobMetricsSnapshot {
  readonly job: string;
  readonly numRestarts: number;
  /** Undefined without checkpointing. */
  readonly checkpoints:
    | {
        readonly numberOfCompletedCheckpoints: number;
        readonly numberOfFailedCheckpoints: number;
        /** Of the newest completed checkpoint; undefined before one completed. */
        readonly lastCheckpointDuration: number | undefined;
        readonly lastCheckpointSize: number | undefined;
      }
    | undefined;
  readonly tasks: readonly TaskMetricsSnapshot[];
}

export interface TaskMetricsSnapshot {
  readonly task: string;
  /** The vertex id (the chain's index in the plan): two tasks may share a name, never a vertex id. */
  readonly vertex: string;
  readonly subtask: number;
  /** NaN when not measured (per-record metrics off). */
  readonly busyTimeMsPerSecond: number;
  readonly idleTimeMsPerSecond: number;
  readonly backPressuredTimeMsPerSecond: number;
  readonly numBytesIn: number;
  readonly numBytesOut: number;
  readonly operators: readonly OperatorMetricsSnapshot[];
}

export interface OperatorMetricsSnapshot {
  readonly operator: string;
  readonly numRecordsIn: number;
  readonly numRecordsOut: number;
  readonly numRecordsInPerSecond: number;
  readonly numRecordsOutPerSecond: number;
  readonly currentInputWatermark: number;
  readonly currentOutputWatermark: number;
  /** Wall-clock time minus the output watermark, in ms; NaN while the watermark is not finite. */
  readonly watermarkLag: number;
  /**
   * Bytes of the operator subtask's state (keyed and operator state) in the newest completed
   * checkpoint; NaN before one completed, or without checkpointing.
   */
  readonly stateSize: number;
  /** Standard gauges: a source's sourceIdleTime, pendingRecords, pendingBytes (runtime/metrics/operator-metrics.ts). */
  readonly gauges: Readonly<Record<string, number>>;
  /** The runtime's counters (numLateRecordsDropped, numRecordsWritten, …). */
  readonly counters: Readonly<Record<string, number>>;
  /** The user's metrics; a meter's `rate` is per second. */
  readonly user: readonly (UserMetricSample | { readonly kind: "meter"; readonly name: string; readonly count: number; readonly rate: number })[];
}

export class JobMetricsRegistry {
  readonly #source: JobMetricsSource;
  readonly #now: () => number;
  readonly #views = new Map<string, MeterView>();

  /** `now`: wall-clock ms (watermark lag compares event time with it). */
  constructor(source: JobMetricsSource, now: () => number) {
    this.#source = source;
    this.#now = now;
  }

  /** Feeds the meters (a snapshot does too); call about every second, more often does no harm. */
  sample(): void {
    this.snapshot();
  }

  snapshot(): JobMetricsSnapshot {
    const now = this.#now();
    const subtasks = this.#source.metrics();
    const used = new Set<string>();
    /** Rate of `count`, counted by a task that started `elapsedMs` ago. */
    const rate = (key: string, count: number, elapsedMs: number): number => {
      used.add(key);
      if (Number.isNaN(count)) return Number.NaN;
      let view = this.#views.get(key);
      if (view === undefined) this.#views.set(key, (view = new MeterView(now - elapsedMs)));
      view.update(now, count);
      return view.rate(now, count);
    };
    const last = this.#source.lastCompletedCheckpoint();
    const stateSize = checkpointedStateSizes(last);
    const tasks = subtasks.map((m): TaskMetricsSnapshot => {
      const at = `${m.task}\0${m.subtask}`;
      const wall = rate(`${at}\0elapsed`, m.elapsedMs, m.elapsedMs);
      // Shares of the task's own elapsed time over the same window (a task reports the three
      // counters together), scaled to ms per second: they add up to 1000 even when reports reach
      // the coordinator late or the task has ended (the counters' rates alone did not: a finished
      // job showed 1,208 ms of idle time per second). NaN stays NaN (metrics off: busy unmeasured).
      const share = (msPerSecond: number): number => (wall > 0 ? Math.min(1_000, (1_000 * msPerSecond) / wall) : 0 * msPerSecond);
      const busy = share(rate(`${at}\0busy`, m.busyMs, m.elapsedMs));
      const backPressured = share(rate(`${at}\0backpressured`, m.backpressuredMs, m.elapsedMs));
      return {
        task: m.task,
        vertex: m.vertex,
        subtask: m.subtask,
        busyTimeMsPerSecond: busy,
        backPressuredTimeMsPerSecond: backPressured,
        // The rest: no input, no credit wait, or another task of the thread ran.
        idleTimeMsPerSecond: Math.max(0, 1_000 - busy - backPressured),
        numBytesIn: m.bytesIn,
        numBytesOut: m.bytesOut,
        operators: m.operators.map((o, i): OperatorMetricsSnapshot => {
          const op = `${at}\0${i}`;
          const finite = o.outputWatermark > MIN_WATERMARK && o.outputWatermark < MAX_WATERMARK;
          return {
            operator: o.name,
            numRecordsIn: o.recordsIn,
            numRecordsOut: o.recordsOut,
            numRecordsInPerSecond: rate(`${op}\0in`, o.recordsIn, m.elapsedMs),
            numRecordsOutPerSecond: rate(`${op}\0out`, o.recordsOut, m.elapsedMs),
            currentInputWatermark: o.inputWatermark,
            currentOutputWatermark: o.outputWatermark,
            watermarkLag: finite ? now - o.outputWatermark : Number.NaN,
            stateSize: stateSize(o.operatorId, m.subtask),
            gauges: o.gauges,
            counters: o.counters,
            user: o.user.map((u) => (u.kind === "meter" ? { ...u, rate: rate(`${op}\0user\0${u.name}`, u.count, m.elapsedMs) } : u)),
          };
        }),
      };
    });
    for (const key of this.#views.keys()) if (!used.has(key)) this.#views.delete(key);
    const counts = this.#source.checkpointCounts();
    return {
      job: this.#source.jobName,
      numRestarts: this.#source.restarts,
      checkpoints:
        counts === undefined
          ? undefined
          : {
              numberOfCompletedCheckpoints: counts.completed,
              numberOfFailedCheckpoints: counts.failed,
              lastCheckpointDuration: last?.durationMs,
              lastCheckpointSize: last?.bytes,
            },
      tasks,
    };
  }
}

/**
 * Bytes per operator subtask in `checkpoint`: what the subtask's acknowledgement said of the
 * operator (0 for an operator of an acknowledging task that holds no state); NaN for a subtask
 * that is not in it (no checkpoint yet, or one of a task deployed since).
 */
function checkpointedStateSizes(checkpoint: CheckpointStats | undefined): (operatorId: string, subtask: number) => number {
  const acked = new Map<number, Map<string, number>[]>();
  for (const s of checkpoint?.subtasks ?? []) {
    // taskId is "<chain index>.<subtask>" (taskIdOf); an operator id belongs to one chain.
    const subtask = Number(s.taskId.slice(s.taskId.lastIndexOf(".") + 1));
    let maps = acked.get(subtask);
    if (maps === undefined) acked.set(subtask, (maps = []));
    maps.push(new Map(Object.entries(s.operatorBytes)));
  }
  return (operatorId, subtask) => {
    const maps = acked.get(subtask);
    if (maps === undefined) return Number.NaN;
    for (const m of maps) {
      const bytes = m.get(operatorId);
      if (bytes !== undefined) return bytes;
    }
    return 0;
  };
}
