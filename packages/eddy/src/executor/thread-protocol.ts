/**
 * How a worker thread starts (WorkerInit), and the placement the coordinator (the thread that
 * started the job) and its workers derive from the plan without talking: which worker runs a
 * subtask, and the id of every channel. What they say to each other once running is the gateway
 * protocol (gateway.ts), carried on the worker's port. Record data never goes through the coordinator: each
 * channel between two workers has a shared-memory ring (frame-ring.ts) that the coordinator
 * allocates and both workers map; one MessagePort per pair of workers carries only doorbells
 * (doorbells.ts), which wake a sleeping worker.
 */
import type { StateBackendSpec } from "../state/state-backend-spec.ts";
import type { MessagePort } from "node:worker_threads";
import { EddyError } from "../core/errors.ts";
import type { LogLevel } from "../core/logger.ts";
import type { Plan, PlanEdge, PlanNode } from "../graph/plan.ts";
import type { JobRef } from "./job-ref.ts";
import type { CheckpointManifest } from "../checkpoint/format/manifest.ts";
import type { CheckpointLocation, CheckpointStorageRef } from "./checkpoint-storage-ref.ts";
import type { WorkerBundle } from "./worker-bundle.ts";
import { frameRingBytesFor } from "../runtime/channels/frame-ring.ts";

export interface WorkerInit {
  readonly job: JobRef;
  readonly parallelism: number | undefined;
  readonly maxParallelism: number | undefined;
  readonly restoredMaxParallelism: Readonly<Record<string, number>> | undefined;
  readonly workerIndex: number;
  readonly workers: number;
  readonly placement: Placement;
  readonly fingerprint: string;
  /** ports[w] connects to worker w (undefined for this worker itself); it carries doorbells. */
  readonly ports: readonly (MessagePort | undefined)[];
  /** The ring of every channel this worker sends or receives on with another worker, by channel id. */
  readonly rings: ReadonlyMap<number, SharedArrayBuffer>;
  /** Every worker's doorbell flag (see Doorbells). */
  readonly doorbells: SharedArrayBuffer;
  readonly batchRecords: number;
  /** Credit of channels within this worker, in records. */
  readonly channelCapacityRecords: number;
  /** Credit of channels to and from other workers, in records (see remoteChannelSizing). */
  readonly remoteCreditRecords: number;
  readonly flushTimeoutMs: number;
  readonly maxRecordsPerSlice: number;
  readonly metricsIntervalMs: number;
  /** Per-record metrics (ExecutorOptions.metricsEnabled). */
  readonly metricsEnabled: boolean;
  /** ExecutorOptions.localAggregation. */
  readonly localAggregation: boolean;
  /** ExecutorOptions.verifyCopyNone. */
  readonly verifyCopyNone: boolean;
  /** ExecutorOptions.sourceYieldRounds. */
  readonly sourceYieldRounds: number;
  /** ExecutorOptions.autoWatermarkIntervalMs: resolved by the coordinator (the key wins over the job's setting). */
  readonly autoWatermarkIntervalMs: number;
  /** The keyed state backend (ExecutorOptions.stateBackend, as data; undefined: heap). */
  readonly stateBackend: StateBackendSpec | undefined;
  readonly logLevel: LogLevel;
  /** Checkpointing: where tasks write, and the checkpoint they restore from (if any). */
  readonly checkpointing: WorkerCheckpointing | undefined;
  /** The job's token: the worker's queryable state server requires it. */
  readonly token: string;
  /** The bundle this worker started from (worker-bundle.ts); undefined: it loads through tsx. */
  readonly bundle: WorkerBundle | undefined;
  /** Where the worker's executor says which task runs user code (task-watchdog.ts). */
  readonly busyBoard: SharedArrayBuffer;
}

export type { CheckpointLocation } from "./checkpoint-storage-ref.ts";

/**
 * A complete checkpoint or savepoint to restore: its manifest, and where its files are — the
 * job's own checkpoint storage (`dir` undefined: recovery after a failure), or a snapshot
 * directory (`--from-checkpoint`, `--from-savepoint`).
 */
export interface RestoreSource {
  readonly manifest: CheckpointManifest;
  readonly dir: string | undefined;
}

export interface WorkerCheckpointing {
  readonly mode: "exactly-once" | "at-least-once";
  readonly storage: CheckpointLocation;
  /** The storage module, when not the local directory. */
  readonly storageRef: CheckpointStorageRef | undefined;
  /** The checkpoint or savepoint to restore. */
  readonly restore: RestoreSource | undefined;
  /** Restored state of operators the job no longer has (or no longer keys) is dropped instead of failing. */
  readonly allowNonRestoredState: boolean;
}

/**
 * Where subtasks run. `shared` is Flink's slot sharing: subtask i of every operator goes to
 * worker i mod W, so forward-connected work stays on one thread and a keyed exchange keeps 1/W of
 * its records local. `spread` deals subtasks of successive operators to successive workers (used to
 * measure a channel between two threads).
 */
export type Placement = "shared" | "spread";

export function placeSubtasks(plan: Plan, workers: number, placement: Placement): (node: PlanNode, subtask: number) => number {
  const offsetOfChain = new Map<PlanNode, number>();
  let offset = 0;
  for (const chain of plan.chains) {
    for (const node of chain.nodes) offsetOfChain.set(node, offset);
    offset += chain.parallelism;
  }
  if (placement === "shared") return (_node, subtask) => subtask % workers;
  return (node, subtask) => (offsetOfChain.get(node)! + subtask) % workers;
}

/**
 * Channel ids, identical on every worker: network edges in plan order, then sender-major. The id
 * space is the whole job, so one transport can carry any number of channels.
 */
export function channelIds(plan: Plan): (edge: PlanEdge, sender: number, receiver: number) => number {
  const base = new Map<PlanEdge, number>();
  let next = 0;
  for (const node of plan.nodes) {
    for (const edge of node.outputs) {
      if (edge.chained) continue;
      base.set(edge, next);
      next += edge.source.parallelism * edge.target.parallelism;
    }
  }
  return (edge, sender, receiver) => {
    const b = base.get(edge);
    if (b === undefined) throw new RangeError(`edge '${edge.source.name}' → '${edge.target.name}' is chained and has no channels`);
    return b + sender * edge.target.parallelism + receiver;
  };
}

/** A channel whose sender and receiver are on different workers. */
export interface CrossWorkerChannel {
  readonly channelId: number;
  readonly sender: number;
  readonly receiver: number;
}

/** Shared memory of cross-worker channels by default: this much per worker, split among its inputs. */
const DEFAULT_CHANNEL_BUFFER_BYTES_PER_WORKER = 8 * 1024 * 1024;
const MIN_DEFAULT_RING_BYTES = 512 * 1024;
const MAX_RING_BYTES = 4 * 1024 * 1024;
const MIN_RING_BYTES = 64 * 1024;
/** Credit per byte of ring: records of ~16 encoded bytes fill the ring before the credit runs out. */
const RING_BYTES_PER_CREDIT = 16;

/**
 * Ring size and credit of the channels between workers. A ring bounds what is in flight on its
 * channel in bytes (frames are decoded one at a time, on the receiver's turn), so credit in
 * records is set to what the ring holds of small records and does not stop the sender first.
 * - `channelBufferBytes` given: rings of that size (rounded down to a power of two, 64 KiB-4 MiB).
 * - Otherwise, when `channelCapacityRecords` was given: rings sized from it (~32 bytes a record)
 *   and credit equal to it, as before there was a byte size.
 * - Otherwise: 8 MiB per worker split among the cross-worker inputs of the worker with the most
 *   (512 KiB-4 MiB each): 4 MiB with two workers and one keyBy, 1 MiB with eight.
 */
export function remoteChannelSizing(
  channels: readonly CrossWorkerChannel[],
  options: { readonly channelCapacityRecords: number; readonly capacityExplicit: boolean; readonly channelBufferBytes: number | undefined },
): { ringBytes: number; creditRecords: number } {
  let ringBytes: number;
  if (options.channelBufferBytes !== undefined) ringBytes = powerOfTwoAtMost(options.channelBufferBytes, MIN_RING_BYTES, MAX_RING_BYTES);
  else if (options.capacityExplicit) {
    return { ringBytes: frameRingBytesFor(options.channelCapacityRecords), creditRecords: options.channelCapacityRecords };
  } else {
    const inputs = new Map<number, number>();
    for (const c of channels) inputs.set(c.receiver, (inputs.get(c.receiver) ?? 0) + 1);
    const most = Math.max(1, ...inputs.values());
    ringBytes = powerOfTwoAtMost(DEFAULT_CHANNEL_BUFFER_BYTES_PER_WORKER / most, MIN_DEFAULT_RING_BYTES, MAX_RING_BYTES);
  }
  return { ringBytes, creditRecords: Math.max(options.channelCapacityRecords, ringBytes / RING_BYTES_PER_CREDIT) };
}

function powerOfTwoAtMost(bytes: number, min: number, max: number): number {
  if (!(bytes > 0)) {
    throw new EddyError("INVALID_CHANNEL_BUFFER", `channelBufferBytes must be a positive number of bytes, got ${bytes}`);
  }
  let p = min;
  while (p * 2 <= bytes && p * 2 <= max) p *= 2;
  return p;
}

/** The channels that cross between workers, derived from the plan as both sides derive it. */
export function crossWorkerChannels(plan: Plan, workers: number, placement: Placement): CrossWorkerChannel[] {
  const place = placeSubtasks(plan, workers, placement);
  const id = channelIds(plan);
  const out: CrossWorkerChannel[] = [];
  for (const node of plan.nodes) {
    for (const edge of node.outputs) {
      if (edge.chained) continue;
      for (let s = 0; s < edge.source.parallelism; s++) {
        const sender = place(edge.source, s);
        for (let r = 0; r < edge.target.parallelism; r++) {
          const receiver = place(edge.target, r);
          if (sender !== receiver) out.push({ channelId: id(edge, s, r), sender, receiver });
        }
      }
    }
  }
  return out;
}
