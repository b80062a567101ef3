/**
 * The two ends of a channel whose sender and receiver run on different threads (or machines).
 * Elements travel as frames (see frames.ts) through a transport that only moves bytes; these
 * classes own encoding, decoding and credit-based flow control:
 *
 * - The receiver grants `capacityRecords` of credit up front. The sender spends credit per record
 *   sent and stops (isWritable = false) when it has none; a batch in progress may overshoot by
 *   at most one batch. Memory per channel is therefore bounded by capacity + one batch, whatever
 *   the input rate. A transport may hold the sender back too (`hasRoom`), e.g. a full ring.
 * - The receiver returns credit as its task consumes records, in chunks of a quarter of the
 *   capacity, and never holds back more than that.
 *
 * Frames are decoded on the receiving task's turn (in `poll`), not when they arrive, so decoding
 * is work of the consuming task and a burst of arrivals costs nothing until it is read.
 */
import { ByteWriter } from "../../core/codec/bytes.ts";
import { CodecError, type BatchCodec } from "../../core/codec/codec.ts";
import type { StreamElement } from "../../core/elements.ts";
import { EddyError } from "../../core/errors.ts";
import { decodeElementFrame, encodeElementFrame, frameSeq } from "./frames.ts";
import type { InputChannel, OutputChannel } from "./channel.ts";

/**
 * The sending end of one channel's transport (implementations: a shared-memory ring between
 * threads, frame-ring.ts; TCP later). Frames arrive whole and in the order sent. Used by one
 * thread, never concurrently.
 */
export interface FrameOutlet {
  /**
   * Sends a frame (at least one byte). Never blocks: what the transport cannot take now waits on
   * this side, in order, and `hasRoom` is false until it is gone. `frame` is copied or sent before
   * this returns, so the caller may reuse its memory.
   */
  send(frame: Uint8Array): void;
  /** Whether frames sent now go out at once (nothing waits on this side). */
  readonly hasRoom: boolean;
  /** Records of credit the receiver returned since the last call. */
  takeCredit(): number;
}

/** The receiving end of one channel's transport. Used by one thread, never concurrently. */
export interface FrameInlet {
  /** Whether bytes are waiting; `peek` may still find only part of a frame. Cheap. */
  readonly hasData: boolean;
  /**
   * The oldest frame not released yet, or undefined. The view is valid until `release()`; the
   * same frame is returned until then.
   */
  peek(): Uint8Array | undefined;
  /** Frees the frame `peek` returned (its memory may be reused at once). No-op without one. */
  release(): void;
  /** Gives `records` of credit back to the sender. */
  returnCredit(records: number): void;
  /**
   * Whether at least half of what the transport can hold is waiting to be read: the sender is
   * held back by this end, or soon will be. Cheap.
   */
  readonly halfFull: boolean;
}

export interface RemoteChannelInfo {
  readonly channelId: number;
  /** Who sends, for errors: e.g. "operator 'Parse' (subtask 1)". */
  readonly senderName: string;
  readonly senderSubtask: number;
  readonly receiverName: string;
  readonly receiverSubtask: number;
}

export class RemoteOutputChannel implements OutputChannel {
  /** A records element is encoded in `push`: the writer reuses its arrays. */
  readonly consumesOnPush = true;
  readonly #info: RemoteChannelInfo;
  readonly #codec: BatchCodec;
  readonly #outlet: FrameOutlet;
  /** Encodes every frame of this channel; its buffer is reused (the outlet copies the bytes). */
  readonly #writer = new ByteWriter();
  #credit: number;
  bytesOut = 0;

  constructor(info: RemoteChannelInfo, codec: BatchCodec, outlet: FrameOutlet, initialCredit: number) {
    this.#info = info;
    this.#codec = codec;
    this.#outlet = outlet;
    this.#credit = initialCredit;
  }

  push(element: StreamElement): void {
    try {
      encodeElementFrame(this.#info.channelId, element, this.#codec, this.#writer);
    } catch (e) {
      throw this.#encodeError(e);
    }
    if (element.kind === "records") this.#credit -= element.values.length;
    const frame = this.#writer.written();
    this.bytesOut += frame.length;
    this.#outlet.send(frame);
  }

  get isWritable(): boolean {
    if (this.#credit <= 0) this.#credit += this.#outlet.takeCredit();
    return this.#credit > 0 && this.#outlet.hasRoom;
  }

  #encodeError(e: unknown): unknown {
    if (!(e instanceof CodecError)) return e;
    const { senderName, senderSubtask, receiverName } = this.#info;
    const field = e.path === "$" ? "the record" : `field '${e.path}'`;
    return new EddyError(
      "RECORD_NOT_ENCODABLE",
      `operator '${senderName}' (subtask ${senderSubtask}) emitted a record that codec '${this.#codec.id}' cannot send to '${receiverName}' on another thread: ${field}: ${e.message}`,
      { operator: senderName, subtask: senderSubtask, cause: e },
    );
  }
}

export class RemoteInputChannel implements InputChannel {
  readonly #info: RemoteChannelInfo;
  readonly #codec: BatchCodec;
  readonly #inlet: FrameInlet;
  readonly #creditChunk: number;
  /**
   * Whether the last element polled still lies in the inlet's memory (its timestamps and key
   * groups are views of the frame). It is released on the next poll: a task handles an element
   * completely before it polls the same channel again.
   */
  #holding = false;
  #consumed = 0;
  bytesIn = 0;

  constructor(info: RemoteChannelInfo, codec: BatchCodec, inlet: FrameInlet, capacityRecords: number) {
    if (!(capacityRecords >= 1)) throw new RangeError(`channel capacity must be ≥ 1 record, got ${capacityRecords}`);
    this.#info = info;
    this.#codec = codec;
    this.#inlet = inlet;
    this.#creditChunk = Math.max(1, Math.floor(capacityRecords / 4));
  }

  /**
   * The next element. A records element from here is valid until the next `poll` of this channel
   * (its typed arrays may be views of the transport's memory); its values are the task's to keep.
   */
  poll(): StreamElement | undefined {
    this.#releaseHeld();
    const frame = this.#inlet.peek();
    if (frame === undefined) return undefined;
    this.#holding = true;
    this.bytesIn += frame.length;
    let element: StreamElement;
    try {
      element = decodeElementFrame(frame, this.#codec, this.#info.channelId);
    } catch (e) {
      const { senderName, senderSubtask, receiverName, receiverSubtask } = this.#info;
      throw new EddyError(
        "CORRUPT_FRAME",
        `'${receiverName}' (subtask ${receiverSubtask}) could not decode a frame from '${senderName}' (subtask ${senderSubtask}): ${e instanceof Error ? e.message : String(e)}`,
        { operator: receiverName, subtask: receiverSubtask, cause: e },
      );
    }
    if (element.kind === "records") {
      this.#consumed += element.values.length;
      if (this.#consumed >= this.#creditChunk) {
        this.#inlet.returnCredit(this.#consumed);
        this.#consumed = 0;
      }
    }
    return element;
  }

  /** Read from the next frame's header, without decoding it (the element held is released first). */
  headSeq(): number | undefined {
    this.#releaseHeld();
    const frame = this.#inlet.peek();
    return frame === undefined ? undefined : frameSeq(frame);
  }

  #releaseHeld(): void {
    if (this.#holding) {
      this.#holding = false;
      this.#inlet.release();
    }
  }

  get backlogged(): boolean {
    return this.#inlet.halfFull;
  }

  /** True also while an element is held: the next poll frees its room even if nothing follows. */
  get hasData(): boolean {
    return this.#holding || this.#inlet.hasData;
  }
}
