/**
 * Writes one operator's output for one network edge: picks a channel per record, gathers records
 * into per-channel batches, and pushes a batch when it is full or when the task flushes (at the
 * end of every task-loop slice, and before any non-record element so order is kept).
 */
import type { StreamElement } from "../../core/elements.ts";
import { BROADCAST, type ChannelSelector } from "./partitioner.ts";
import type { OutputChannel } from "./local-channel.ts";

export class RecordWriter {
  readonly #channels: readonly OutputChannel[];
  readonly #selector: ChannelSelector;
  readonly #batchRecords: number;
  /** Pending batch per channel; `values[c].length === timestamps[c].length`. */
  #values: unknown[][];
  #timestamps: number[][];
  /** Records written through this writer (for metrics). */
  recordsOut = 0;

  constructor(channels: readonly OutputChannel[], selector: ChannelSelector, batchRecords: number) {
    this.#channels = channels;
    this.#selector = selector;
    this.#batchRecords = batchRecords;
    this.#values = channels.map(() => []);
    this.#timestamps = channels.map(() => []);
  }

  /** hot path */
  write(value: unknown, timestamp: number): void {
    const channel = this.#channels.length === 1 ? 0 : this.#selector.select(value);
    this.recordsOut++;
    if (channel === BROADCAST) {
      for (let c = 0; c < this.#channels.length; c++) this.#append(c, value, timestamp);
    } else {
      this.#append(channel, value, timestamp);
    }
  }

  #append(channel: number, value: unknown, timestamp: number): void {
    const values = this.#values[channel]!;
    values.push(value);
    this.#timestamps[channel]!.push(timestamp);
    if (values.length >= this.#batchRecords) this.#flushChannel(channel);
  }

  #flushChannel(channel: number): void {
    const values = this.#values[channel]!;
    if (values.length === 0) return;
    this.#channels[channel]!.push({ kind: "records", values, timestamps: this.#timestamps[channel]! });
    this.#values[channel] = [];
    this.#timestamps[channel] = [];
  }

  flush(): void {
    for (let c = 0; c < this.#channels.length; c++) this.#flushChannel(c);
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
