/**
 * The two ends of a channel whose sender and receiver run on different threads (or machines).
 * Elements travel as frames (see frames.ts) through a transport that only moves bytes; these
 * classes own encoding, decoding and credit-based flow control:
 *
 * - The receiver grants `capacityRecords` of credit up front. The sender spends credit per record
 *   sent and stops (isWritable = false) when it has none; a batch in progress may overshoot by
 *   at most one batch. Memory per channel is therefore bounded by capacity + one batch, whatever
 *   the input rate.
 * - The receiver returns credit as its task consumes records, in chunks of a quarter of the
 *   capacity so credit frames stay rare, and never holds back more than that.
 *
 * Frames are decoded on the receiving task's turn (in `poll`), not when they arrive, so decoding
 * is work of the consuming task and a burst of arrivals costs nothing until it is read.
 */
import { ByteWriter } from "../../core/codec/bytes.ts";
import { CodecError, type BatchCodec } from "../../core/codec/codec.ts";
import type { StreamElement } from "../../core/elements.ts";
import { EddyError } from "../../core/errors.ts";
import { RingBuffer } from "../../core/ring-buffer.ts";
import { decodeElementFrame, encodeCreditFrame, encodeElementFrame } from "./frames.ts";
import type { InputChannel, OutputChannel } from "./local-channel.ts";

/** Moves frames to the other side. Implementations: a MessagePort between threads; TCP later. */
export type FrameSink = (frame: ArrayBuffer) => void;

export interface RemoteChannelInfo {
  readonly channelId: number;
  /** Who sends, for errors: e.g. "operator 'Parse' (subtask 1)". */
  readonly senderName: string;
  readonly senderSubtask: number;
  readonly receiverName: string;
  readonly receiverSubtask: number;
}

export class RemoteOutputChannel implements OutputChannel {
  readonly #info: RemoteChannelInfo;
  readonly #codec: BatchCodec;
  readonly #send: FrameSink;
  readonly #writer = new ByteWriter();
  #credit: number;
  bytesOut = 0;

  constructor(info: RemoteChannelInfo, codec: BatchCodec, send: FrameSink, initialCredit: number) {
    this.#info = info;
    this.#codec = codec;
    this.#send = send;
    this.#credit = initialCredit;
  }

  push(element: StreamElement): void {
    let frame: ArrayBuffer;
    try {
      frame = encodeElementFrame(this.#info.channelId, element, this.#codec, this.#writer);
    } catch (e) {
      throw this.#encodeError(e);
    }
    if (element.kind === "records") this.#credit -= element.values.length;
    this.bytesOut += frame.byteLength;
    this.#send(frame);
  }

  get isWritable(): boolean {
    return this.#credit > 0;
  }

  /** The receiver consumed `records`: that many more may be sent. */
  addCredit(records: number): void {
    this.#credit += records;
  }

  #encodeError(e: unknown): unknown {
    if (!(e instanceof CodecError)) return e;
    const { senderName, senderSubtask, receiverName } = this.#info;
    const field = e.path === "$" ? "the record" : `field '${e.path}'`;
    return new EddyError(
      "RECORD_NOT_ENCODABLE",
      `operator '${senderName}' (subtask ${senderSubtask}) emitted a record that codec '${this.#codec.id}' cannot send to '${receiverName}' on another thread: ${field}: ${e.message}`,
      { domain: "user", operator: senderName, subtask: senderSubtask, cause: e },
    );
  }
}

export class RemoteInputChannel implements InputChannel {
  readonly #info: RemoteChannelInfo;
  readonly #codec: BatchCodec;
  readonly #sendCredit: FrameSink;
  readonly #frames = new RingBuffer<ArrayBuffer>(16);
  readonly #creditChunk: number;
  #consumed = 0;
  bytesIn = 0;

  constructor(info: RemoteChannelInfo, codec: BatchCodec, sendCredit: FrameSink, capacityRecords: number) {
    if (!(capacityRecords >= 1)) throw new RangeError(`channel capacity must be ≥ 1 record, got ${capacityRecords}`);
    this.#info = info;
    this.#codec = codec;
    this.#sendCredit = sendCredit;
    this.#creditChunk = Math.max(1, Math.floor(capacityRecords / 4));
  }

  /** A frame for this channel arrived from the transport. */
  receive(frame: ArrayBuffer): void {
    this.#frames.push(frame);
  }

  poll(): StreamElement | undefined {
    const frame = this.#frames.shift();
    if (frame === undefined) return undefined;
    this.bytesIn += frame.byteLength;
    let element: StreamElement;
    try {
      element = decodeElementFrame(frame, this.#codec);
    } catch (e) {
      const { senderName, senderSubtask, receiverName, receiverSubtask } = this.#info;
      throw new EddyError(
        "CORRUPT_FRAME",
        `'${receiverName}' (subtask ${receiverSubtask}) could not decode a frame from '${senderName}' (subtask ${senderSubtask}): ${e instanceof Error ? e.message : String(e)}`,
        { domain: "internal", operator: receiverName, subtask: receiverSubtask, cause: e },
      );
    }
    if (element.kind === "records") {
      this.#consumed += element.values.length;
      if (this.#consumed >= this.#creditChunk) {
        this.#sendCredit(encodeCreditFrame(this.#info.channelId, this.#consumed));
        this.#consumed = 0;
      }
    }
    return element;
  }

  get hasData(): boolean {
    return this.#frames.size > 0;
  }
}
