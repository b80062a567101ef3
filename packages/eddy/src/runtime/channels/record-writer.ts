/**
 * Writes one operator's output for one network edge: picks a channel per record, gathers records
 * into per-channel batches, and pushes a batch when it is full or when the task flushes (a batch
 * older than the flush timeout, when nothing is runnable, and before any non-record element so
 * order is kept). Writers of one task to the same operator push together (`group`), so a
 * two-input task fed by both (a join of auctions and bids from one source) reads them in about the
 * order they were written. Without it the sparse side waited for its batch to fill or time out:
 * ~80 % of Nexmark q20's bids reached the join before their auction at parallelism 1 (0.7 % with
 * the same-thread flush this replaced; 20-30 % less CPU per event for q4, q9, q20) and 30-50 % at
 * parallelism 2, where that flush did not reach (1.3 % with the group and the source's blocks).
 */
import type { StreamElement } from "../../core/elements.ts";
import { BROADCAST, type ChannelSelector } from "./partitioner.ts";
import type { OutputChannel } from "./channel.ts";

export class RecordWriter {
  readonly #channels: readonly OutputChannel[];
  readonly #selector: ChannelSelector;
  /**
   * One channel and a selector that need not see the records: every record goes to channel 0
   * without a call (calling the round-robin selector anyway cost ~10 % of an inline
   * `rebalance().map()` job at parallelism 1, 10 M records, alternated three times).
   */
  readonly #single: boolean;
  readonly #batchRecords: number;
  /**
   * Pending batch per channel, preallocated to the batch size: slots [0, fill[c]) are filled.
   * A batch is trimmed to its fill when it is pushed to a queue (same thread), and a new one
   * started; a channel that encodes on push gets them as they are (a copy of the filled part if
   * not full), and they take the next batch.
   */
  #values: unknown[][];
  #timestamps: number[][];
  /** Pending key groups per channel, when the selector computes them (keyed edges). */
  #keyGroups: number[][] | undefined;
  readonly #fill: number[];
  /** performance.now() of the first record of each pending batch. */
  readonly #since: number[];
  recordsOut = 0;
  /**
   * The task's writers to the same downstream operator, this one included, in the order of that
   * operator's inputs (a join fed by two edges of this task: its first input's writer first), when
   * there are several. They push their batches for a receiver together, in that order, whichever
   * of them starts it (a full batch, a timeout, a flush); with the task-wide `seq` each batch
   * carries, the receiver reads them in that order too (StreamTask reads the lower `seq` first).
   * So a join that keeps its first input (auctions) and looks it up from its second (bids) sees an
   * auction before the bids written after it. Without this, the sparse edge's batch to another
   * thread waited to fill or time out, and at parallelism 2 half of Nexmark q20's bids reached the
   * join before their auction and waited in its state.
   */
  group: readonly RecordWriter[] | undefined = undefined;
  /** Numbers every batch the task's writers push (shared by them; see RecordBatch.seq). */
  sequence: { value: number } = { value: 0 };

  constructor(channels: readonly OutputChannel[], selector: ChannelSelector, batchRecords: number) {
    this.#channels = channels;
    this.#selector = selector;
    this.#single = channels.length === 1 && selector.checksRecords !== true;
    this.#batchRecords = batchRecords;
    this.#values = channels.map(() => new Array<unknown>(batchRecords));
    this.#timestamps = channels.map(() => new Array<number>(batchRecords));
    this.#keyGroups = channels.length > 1 && "keyGroup" in selector ? channels.map(() => new Array<number>(batchRecords)) : undefined;
    this.#fill = channels.map(() => 0);
    this.#since = channels.map(() => 0);
  }

  /** hot path */
  write(value: unknown, timestamp: number): void {
    if (this.#single) {
      this.#append(0, value, timestamp);
      return;
    }
    const channel = this.#selector.select(value);
    if (channel === BROADCAST) {
      for (let c = 0; c < this.#channels.length; c++) this.#append(c, value, timestamp);
    } else {
      if (this.#keyGroups !== undefined) this.#keyGroups[channel]![this.#fill[channel]!] = this.#selector.keyGroup!;
      this.#append(channel, value, timestamp);
    }
  }

  #append(channel: number, value: unknown, timestamp: number): void {
    const n = this.#fill[channel]!;
    if (n === 0) this.#since[channel] = performance.now();
    this.#values[channel]![n] = value;
    this.#timestamps[channel]![n] = timestamp;
    this.#fill[channel] = n + 1;
    if (n + 1 >= this.#batchRecords) this.#flushChannel(channel);
  }

  /** Pushes the pending batch of `channel`, with its group's (see `group`); returns whether this writer had one. */
  #flushChannel(channel: number): boolean {
    if (this.#fill[channel]! === 0) return false;
    const group = this.group;
    if (group === undefined) this.#pushChannel(channel);
    else for (let i = 0; i < group.length; i++) group[i]!.#pushChannel(channel);
    return true;
  }

  /** Pushes the pending batch of `channel`, if any, with the task's next `seq`. */
  #pushChannel(channel: number): void {
    const n = this.#fill[channel]!;
    if (n === 0) return;
    const values = this.#values[channel]!;
    const timestamps = this.#timestamps[channel]!;
    const keyGroups = this.#keyGroups?.[channel];
    const seq = (this.sequence.value = (this.sequence.value + 1) >>> 0);
    this.#fill[channel] = 0;
    const out = this.#channels[channel]!;
    if (out.consumesOnPush === true) {
      // The channel encodes the batch before push returns: the arrays take the next batch (a
      // full batch of a channel to another thread left ~24 bytes of arrays per record to the GC).
      // A part-filled one goes as a copy of its filled part, the arrays keep their length.
      const whole = n === values.length;
      out.push({
        kind: "records",
        values: whole ? values : values.slice(0, n),
        timestamps: whole ? timestamps : timestamps.slice(0, n),
        keyGroups: whole || keyGroups === undefined ? keyGroups : keyGroups.slice(0, n),
        seq,
      });
      // Cleared, so the records sent are not kept alive until overwritten.
      values.fill(undefined, 0, n);
    } else {
      if (n < values.length) {
        values.length = n;
        timestamps.length = n;
        if (keyGroups !== undefined) keyGroups.length = n;
      }
      out.push({ kind: "records", values, timestamps, keyGroups, seq });
      this.#values[channel] = new Array<unknown>(this.#batchRecords);
      this.#timestamps[channel] = new Array<number>(this.#batchRecords);
      if (this.#keyGroups !== undefined) this.#keyGroups[channel] = new Array<number>(this.#batchRecords);
    }
    this.recordsOut += n;
  }

  /** Sends every pending batch; returns whether there was any. */
  flush(): boolean {
    let sent = false;
    for (let c = 0; c < this.#channels.length; c++) sent = this.#flushChannel(c) || sent;
    return sent;
  }

  /** Sends the pending batches whose first record was written before `time`. */
  flushOlderThan(time: number): void {
    for (let c = 0; c < this.#channels.length; c++) if (this.#fill[c]! > 0 && this.#since[c]! <= time) this.#flushChannel(c);
  }

  /** Bytes the channels of this writer encoded (0 for same-thread channels). */
  get bytesOut(): number {
    let n = 0;
    for (const channel of this.#channels) n += channel.bytesOut ?? 0;
    return n;
  }

  /** Sends a non-record element to every channel, after the records written before it. */
  broadcastElement(element: StreamElement): void {
    this.flush();
    for (const channel of this.#channels) channel.push(element);
  }

  /** Whether every channel has credit; a task produces more only while this holds. */
  get isWritable(): boolean {
    for (const channel of this.#channels) if (!channel.isWritable) return false;
    return true;
  }
}
