/**
 * Frames: stream elements as bytes, for channels that cross a thread (and later a machine). One
 * frame is one ArrayBuffer; a transport moves whole frames (transferred between threads,
 * length-prefixed on TCP). Many channels share one transport, so each frame names its channel.
 *
 * Layout (little endian), header of 8 bytes:
 *
 *   u8  type        1 records, 2 watermark, 3 status, 4 barrier, 5 end, 16 credit
 *   u8  version     1
 *   u16 flags       records: bit 0 = key groups follow the timestamps; 0 otherwise
 *   u32 channel     channel id, unique per job (see `channelId`)
 *
 * then by type:
 *
 *   records    u32 count, pad to 8, f64 × count timestamps (NaN = none),
 *              [pad to 4, i32 × count key groups if flag bit 0], codec payload
 *   watermark  f64 timestamp (±Infinity allowed)
 *   status     u8 idle (1) / active (0)
 *   barrier    pad to 8, f64 checkpointId, f64 timestampMs, u8 isSavepoint
 *   end        nothing
 *   credit     u32 records the receiver has consumed (the sender may send that many more)
 */
import type { BatchCodec } from "../../core/codec/codec.ts";
import { ByteReader, ByteWriter } from "../../core/codec/bytes.ts";
import { CodecError } from "../../core/codec/codec.ts";
import { END_OF_INPUT, STATUS_ACTIVE, STATUS_IDLE, type StreamElement } from "../../core/elements.ts";

export const FRAME_VERSION = 1;
export const FRAME_HEADER_BYTES = 8;

export const FrameType = {
  records: 1,
  watermark: 2,
  status: 3,
  barrier: 4,
  end: 5,
  credit: 16,
} as const;

const ELEMENT_TYPE = {
  records: FrameType.records,
  watermark: FrameType.watermark,
  status: FrameType.status,
  barrier: FrameType.barrier,
  end: FrameType.end,
} as const;

const FLAG_KEY_GROUPS = 1;

function header(writer: ByteWriter, type: number, channel: number, flags = 0): void {
  writer.u8(type);
  writer.u8(FRAME_VERSION);
  writer.u16(flags);
  writer.u32(channel);
}

/** Encodes one element for `channel`. The writer is reset first and may be reused afterwards. */
export function encodeElementFrame(channel: number, element: StreamElement, codec: BatchCodec, writer: ByteWriter): ArrayBuffer {
  writer.reset();
  const keyGroups = element.kind === "records" ? element.keyGroups : undefined;
  header(writer, ELEMENT_TYPE[element.kind], channel, keyGroups === undefined ? 0 : FLAG_KEY_GROUPS);
  switch (element.kind) {
    case "records": {
      const n = element.values.length;
      writer.u32(n);
      writer.align(8);
      writer.f64Array(element.timestamps, n);
      if (keyGroups !== undefined) writer.i32Array(keyGroups, n);
      codec.encode(element.values, writer);
      break;
    }
    case "watermark":
      writer.align(8);
      writer.f64(element.timestamp);
      break;
    case "status":
      writer.u8(element.idle ? 1 : 0);
      break;
    case "barrier":
      writer.align(8);
      writer.f64(element.checkpointId);
      writer.f64(element.timestampMs);
      writer.u8(element.isSavepoint ? 1 : 0);
      break;
    case "end":
      break;
  }
  return writer.finish();
}

export function encodeCreditFrame(channel: number, records: number): ArrayBuffer {
  const buffer = new ArrayBuffer(FRAME_HEADER_BYTES + 4);
  const view = new DataView(buffer);
  view.setUint8(0, FrameType.credit);
  view.setUint8(1, FRAME_VERSION);
  view.setUint32(4, channel, true);
  view.setUint32(8, records, true);
  return buffer;
}

export interface FrameHeader {
  readonly type: number;
  readonly channel: number;
}

/** Reads and checks the header; throws CORRUPT_FRAME for anything that is not a frame. */
export function readFrameHeader(frame: ArrayBuffer): FrameHeader {
  if (!(frame instanceof ArrayBuffer) || frame.byteLength < FRAME_HEADER_BYTES) {
    throw CodecError.corrupt("received a message that is not a frame");
  }
  const view = new DataView(frame);
  const version = view.getUint8(1);
  if (version !== FRAME_VERSION) {
    throw CodecError.corrupt(`frame version ${version} is not supported (this Eddy speaks ${FRAME_VERSION})`);
  }
  return { type: view.getUint8(0), channel: view.getUint32(4, true) };
}

export function creditOf(frame: ArrayBuffer): number {
  if (frame.byteLength < FRAME_HEADER_BYTES + 4) throw CodecError.corrupt("credit frame is truncated");
  return new DataView(frame).getUint32(FRAME_HEADER_BYTES, true);
}

/** Decodes an element frame (any type but credit). */
export function decodeElementFrame(frame: ArrayBuffer, codec: BatchCodec): StreamElement {
  const reader = new ByteReader(frame, 0);
  const type = reader.u8();
  reader.u8();
  const flags = reader.u16();
  reader.u32();
  switch (type) {
    case FrameType.records: {
      const n = reader.u32();
      reader.align(8);
      const timestamps = reader.f64Array(n);
      const keyGroups = (flags & FLAG_KEY_GROUPS) !== 0 ? reader.i32Array(n) : undefined;
      const values = codec.decode(reader, n);
      if (values.length !== n) {
        throw CodecError.corrupt(`codec '${codec.id}' decoded ${values.length} records, the frame holds ${n}`);
      }
      return { kind: "records", values, timestamps, keyGroups };
    }
    case FrameType.watermark:
      reader.align(8);
      return { kind: "watermark", timestamp: reader.f64() };
    case FrameType.status:
      return reader.u8() === 1 ? STATUS_IDLE : STATUS_ACTIVE;
    case FrameType.barrier: {
      reader.align(8);
      const checkpointId = reader.f64();
      const timestampMs = reader.f64();
      return { kind: "barrier", checkpointId, timestampMs, isSavepoint: reader.u8() === 1 };
    }
    case FrameType.end:
      return END_OF_INPUT;
    default:
      throw CodecError.corrupt(`unknown frame type ${type}`);
  }
}
