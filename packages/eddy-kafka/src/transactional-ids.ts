/**
 * Transactional ids of the exactly-once KafkaSink, and which of them a writer aborts when it
 * starts (Flink's TransactionalIdFactory and TransactionAborter, with two changes: see below).
 *
 * An id is `<prefix>-<subtask>-<generation>-<seq>`:
 * - `<generation>` is the id of the checkpoint the job restored from (0 on a fresh start): the
 *   writers of one run after one restore name their transactions in their own space, so they can
 *   never reuse an id that a restored committable holds (those were named by an earlier
 *   generation), also when a rescale gave another subtask's state to another writer;
 * - `<seq>` counts the subtask's transactions in its generation, 0, 1, 2, … with no gaps: a
 *   number is taken when the first record after a barrier is written, so every id below the
 *   subtask's `nextSeq` at a barrier is held by that checkpoint (or an earlier one), and every
 *   id at or above it is not.
 *
 * Flink names ids by checkpoint id (`<prefix>-<subtask>-<checkpointId>`) and probes upward from
 * the restored one until an unused id; checkpoint ids can skip (a declined checkpoint), so the
 * probe can stop at a gap and miss a transaction above it. Counting transactions avoids the gap.
 *
 * On start, a writer aborts (by initTransactions, which also fences their producers):
 * 1. for every writer state it received (one per old subtask, divided among the new subtasks at
 *    a rescale): the ids of that old subtask's generation from its `nextSeq` up, until an id the
 *    broker had never seen (epoch 0 on init);
 * 2. the ids of its own generation for subtasks `subtask`, `subtask + parallelism`, … from seq 0
 *    up, until an unused one (what earlier attempts after the same restore opened, at this or a
 *    higher parallelism); the subtasks stop at the first whose seq 0 is unused.
 * Transactions left by a generation that no restore continues (a run that crashed before its
 * first checkpoint, followed by a restore from an older checkpoint, or a fresh start after a run
 * with checkpoints) are not found: the broker aborts them when their transaction timeout passes.
 */
import { EddyError } from "eddy";

export const PREFIX_PATTERN = /^[a-zA-Z0-9._-]{1,200}$/;

export const transactionalId = (prefix: string, subtask: number, generation: number, seq: number): string => `${prefix}-${subtask}-${generation}-${seq}`;

/** The writer state of an exactly-once KafkaSink subtask at a barrier. Version 1. */
export interface KafkaWriterState {
  readonly v: 1;
  readonly subtask: number;
  readonly generation: number;
  /** Transactions with a lower seq are held by this checkpoint's committables (or earlier ones). */
  readonly nextSeq: number;
}

/** The committable: a pre-committed transaction (enough to commit it from any process). Version 1. */
export interface KafkaCommittable {
  readonly v: 1;
  readonly transactionalId: string;
  readonly producerId: number;
  readonly epoch: number;
}

const isNat = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;

export function readWriterState(x: unknown): KafkaWriterState {
  const s = x as Partial<KafkaWriterState> | null;
  if (s === null || typeof s !== "object" || s.v !== 1 || !isNat(s.subtask) || !isNat(s.generation) || !isNat(s.nextSeq)) {
    throw new EddyError("KAFKA_SINK_FAILED", `KafkaSink: the writer state in the restored checkpoint is not valid (${JSON.stringify(x)?.slice(0, 200)})`);
  }
  return { v: 1, subtask: s.subtask, generation: s.generation, nextSeq: s.nextSeq };
}

export function readCommittable(x: unknown): KafkaCommittable {
  const c = x as Partial<KafkaCommittable> | null;
  if (c === null || typeof c !== "object" || c.v !== 1 || typeof c.transactionalId !== "string" || !isNat(c.producerId) || !isNat(c.epoch)) {
    throw new EddyError("KAFKA_SINK_FAILED", `KafkaSink: a committable in the checkpoint is not valid (${JSON.stringify(x)?.slice(0, 200)})`);
  }
  return { v: 1, transactionalId: c.transactionalId, producerId: c.producerId, epoch: c.epoch };
}

/** One run of ids to abort: `<prefix>-<subtask>-<generation>-<seq>` for seq from `fromSeq` until an unused one. */
export interface AbortRun {
  readonly subtask: number;
  readonly generation: number;
  readonly fromSeq: number;
}

/**
 * The runs a writer of `subtask` aborts on start in generation `generation`, given the writer
 * states it received (steps 1 and 2 of the file comment for its own subtask). The runs of its own
 * generation for higher subtasks (`subtask + parallelism`, …) are open-ended: the writer goes on
 * until one of them had never been used (KafkaSinkWriter.#abortLingering).
 */
export function abortPlan(restored: readonly KafkaWriterState[], subtask: number, generation: number): AbortRun[] {
  const runs: AbortRun[] = [];
  for (const s of restored) {
    // A state of this generation is impossible (a checkpoint's generation is below its id); kept safe anyway.
    if (s.generation !== generation) runs.push({ subtask: s.subtask, generation: s.generation, fromSeq: s.nextSeq });
  }
  runs.push({ subtask, generation, fromSeq: 0 });
  return runs;
}
