/**
 * Writes one operator's output for one network edge: picks a channel per record, gathers records
 * into per-channel batches, and pushes a batch when it is full or when the task flushes (at the
 * end of every task-loop slice, and before any non-record element so order is kept).
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
   * A batch is trimmed to its fill when it is pushed.
   */
  #values: unknown[][];
  #timestamps: number[][];
  /** Pending key groups per channel, when the selector computes them (keyed edges). */
  #keyGroups: number[][] | undefined;
  readonly #fill: number[];
  /** performance.now() of the first record of each pending batch. */
  readonly #since: number[];
  recordsOut = 0;

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

  #flushChannel(channel: number): boolean {
    const n = this.#fill[channel]!;
    if (n === 0) return false;
    const values = this.#values[channel]!;
    const timestamps = this.#timestamps[channel]!;
    const keyGroups = this.#keyGroups?.[channel];
    if (n < values.length) {
      values.length = n;
      timestamps.length = n;
      if (keyGroups !== undefined) keyGroups.length = n;
    }
    this.#channels[channel]!.push({ kind: "records", values, timestamps, keyGroups });
    this.#values[channel] = new Array<unknown>(this.#batchRecords);
    this.#timestamps[channel] = new Array<number>(this.#batchRecords);
    if (this.#keyGroups !== undefined) this.#keyGroups[channel] = new Array<number>(this.#batchRecords);
    this.#fill[channel] = 0;
    this.recordsOut += n;
    return true;
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
