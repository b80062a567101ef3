/**
 * Stream elements: what travels on a channel between tasks. Inside a chain, operators call each
 * other directly and never build these; they exist only at task boundaries, where records are
 * grouped into batches so per-element costs (queueing, encoding, waking a task) are paid once per
 * batch, not once per record.
 */

/**
 * A batch of records. `values[i]` has timestamp `timestamps[i]` (NO_TIMESTAMP when none).
 * Invariant: `values.length === timestamps.length > 0`. Ownership passes to the receiver with
 * the batch; the sender never touches it again.
 */
export interface RecordBatch {
  readonly kind: "records";
  readonly values: unknown[];
  /** A number[] within a thread; a Float64Array view when decoded from another thread. */
  readonly timestamps: ArrayLike<number>;
  /** Each record's key group, when the edge is keyed and the partitioner computed them. */
  readonly keyGroups?: ArrayLike<number> | undefined;
  /**
   * Where the sending task pushed this batch among all the batches it pushed, on any edge (a
   * uint32 that wraps): a task fed by two edges of one upstream task (a join of auctions and bids
   * from one source) reads the batch pushed first first (see RecordWriter, StreamTask). Absent on
   * batches no RecordWriter sent.
   */
  readonly seq?: number;
}

/** Event time has reached `timestamp`: no more records with a timestamp ≤ it are expected. */
export interface WatermarkElement {
  readonly kind: "watermark";
  readonly timestamp: number;
}

/** The sending channel went idle (its watermark no longer holds back the minimum) or active. */
export interface WatermarkStatusElement {
  readonly kind: "status";
  readonly idle: boolean;
}

/** A checkpoint barrier: everything before it belongs to checkpoint `checkpointId`. */
export interface CheckpointBarrier {
  readonly kind: "barrier";
  readonly checkpointId: number;
  readonly timestampMs: number;
  /** Savepoints are always aligned; checkpoints may be unaligned later. */
  readonly isSavepoint: boolean;
}

/** The sender has finished: nothing follows on this channel. */
export interface EndOfInput {
  readonly kind: "end";
}

export type StreamElement = RecordBatch | WatermarkElement | WatermarkStatusElement | CheckpointBarrier | EndOfInput;

export const END_OF_INPUT: EndOfInput = Object.freeze({ kind: "end" });
export const STATUS_IDLE: WatermarkStatusElement = Object.freeze({ kind: "status", idle: true });
export const STATUS_ACTIVE: WatermarkStatusElement = Object.freeze({ kind: "status", idle: false });
