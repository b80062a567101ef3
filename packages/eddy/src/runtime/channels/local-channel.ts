/**
 * A channel between two tasks on the same thread: a FIFO of stream elements passed by reference
 * (never encoded). Flow control is by credit in records: the writer may push while fewer than
 * `capacityRecords` records are queued; a batch already being written may overshoot by at most
 * one batch, so memory stays bounded by capacity + one batch per channel.
 */
import { RingBuffer } from "../../core/ring-buffer.ts";
import type { StreamElement } from "../../core/elements.ts";
import { CONTROL_AT_HEAD, type InputChannel, type OutputChannel } from "./channel.ts";

export class LocalChannel implements InputChannel, OutputChannel {
  readonly #queue = new RingBuffer<StreamElement>(32);
  readonly #capacityRecords: number;
  #queuedRecords = 0;

  constructor(capacityRecords: number) {
    if (!(capacityRecords >= 1)) throw new RangeError(`channel capacity must be ≥ 1 record, got ${capacityRecords}`);
    this.#capacityRecords = capacityRecords;
  }

  push(element: StreamElement): void {
    if (element.kind === "records") this.#queuedRecords += element.values.length;
    this.#queue.push(element);
  }

  poll(): StreamElement | undefined {
    const element = this.#queue.shift();
    if (element !== undefined && element.kind === "records") this.#queuedRecords -= element.values.length;
    return element;
  }

  headSeq(): number | undefined {
    const head = this.#queue.peek();
    if (head === undefined) return undefined;
    return head.kind === "records" ? head.seq : CONTROL_AT_HEAD;
  }

  get hasData(): boolean {
    return this.#queue.size > 0;
  }

  get isWritable(): boolean {
    return this.#queuedRecords < this.#capacityRecords;
  }

  get queuedRecords(): number {
    return this.#queuedRecords;
  }
}
