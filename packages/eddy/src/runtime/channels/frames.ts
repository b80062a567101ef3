/**
 * Frames: stream elements as bytes, for channels that cross a thread (and later a machine). A
 * transport moves whole frames (through a shared-memory ring between threads, length-prefixed on
 * TCP). Each frame names its channel, so a transport may carry several channels, and a receiver
 * can check that a frame is for the channel it reads.
 *
 * Layout (little endian), header of 8 bytes:
 *
 *   u8  type        1 records, 2 watermark, 3 status, 4 barrier, 5 end (16 is reserved for
 *                   credit frames of transports that carry credit in band; the ring carries
 *                   credit in shared memory)
 *   u8  version     3
 *   u16 flags       records: bit 0 = key groups follow the timestamps; bit 1 = one timestamp
 *                   stands for all records; 0 otherwise
 *   u32 channel     channel id, unique per job (see `channelId`)
 *
 * then by type:
 *
 *   records    u32 count, u32 seq (the batch's RecordBatch.seq; 0 when it has none),
 *              timestamps: f64 × count (NaN = none), or one f64 when
 *              flag bit 1 is set (every record has that timestamp, bit for bit),
 *              [pad to 2, u16 × count key groups if flag bit 0], codec payload
 *   watermark  f64 timestamp (±Infinity allowed)
 *   status     u8 idle (1) / active (0)
 *   barrier    pad to 8, f64 checkpointId, f64 timestampMs, u8 isSavepoint
 *   end        nothing
 */
import type { BatchCodec } from "../../core/codec/codec.ts";
import { ByteReader, ByteWriter } from "../../core/codec/bytes.ts";
import { CodecError } from "../../core/codec/codec.ts";
import { END_OF_INPUT, STATUS_ACTIVE, STATUS_IDLE, type StreamElement } from "../../core/elements.ts";
import { CONTROL_AT_HEAD } from "./channel.ts";

export const FRAME_VERSION = 3;
export const FRAME_HEADER_BYTES = 8;

export const FrameType = {
  records: 1,
  watermark: 2,
  status: 3,
  barrier: 4,
  end: 5,
} as const;

const FLAG_KEY_GROUPS = 1;
const FLAG_ONE_TIMESTAMP = 2;

/**
 * Whether the first `n` timestamps are all `Object.is`-equal to the first (NaN included: records
 * without timestamps, the common case, then cost 8 bytes per frame instead of 8 per record).
 */
function oneTimestamp(timestamps: ArrayLike<number>, n: number): boolean {
  const first = timestamps[0]!;
  if (first !== first) {
    for (let i = 1; i < n; i++) if (timestamps[i] === timestamps[i]) return false;
    return true;
  }
  if (first === 0) {
    for (let i = 1; i < n; i++) if (!Object.is(timestamps[i], first)) return false;
    return true;
  }
  for (let i = 1; i < n; i++) if (timestamps[i] !== first) return false;
  return true;
}

/**
 * Timestamps of a frame that carries one for all its records: views of one array filled with that
 * value, shared by every such frame until the value changes. Never written after it is filled,
 * so a view handed out earlier keeps its values.
 */
let filledTimestamps = new Float64Array(0);
function timestampsOf(value: number, n: number): Float64Array {
  if (filledTimestamps.length < n || !Object.is(filledTimestamps[0], value)) {
    filledTimestamps = new Float64Array(Math.max(n, 1024)).fill(value);
  }
  return filledTimestamps.subarray(0, n);
}

function header(writer: ByteWriter, type: number, channel: number, flags = 0): void {
  writer.u8(type);
  writer.u8(FRAME_VERSION);
  writer.u16(flags);
  writer.u32(channel);
}

/** Encodes one element for `channel`: the writer is reset first, then holds the frame (`written()`). */
export function encodeElementFrame(channel: number, element: StreamElement, codec: BatchCodec, writer: ByteWriter): void {
  writer.reset();
  // A records frame's flags depend on its batch; every other frame's are 0.
  if (element.kind !== "records") header(writer, FrameType[element.kind], channel);
  switch (element.kind) {
    case "records": {
      const { values, timestamps, keyGroups } = element;
      const n = values.length;
      const one = n > 0 && oneTimestamp(timestamps, n);
      header(writer, FrameType.records, channel, (keyGroups === undefined ? 0 : FLAG_KEY_GROUPS) | (one ? FLAG_ONE_TIMESTAMP : 0));
      writer.u32(n);
      writer.u32(element.seq ?? 0);
      if (one) writer.f64(timestamps[0]!);
      else writer.f64Array(timestamps, n);
      // Key groups are below the max parallelism, at most 2^15.
      if (keyGroups !== undefined) writer.u16Array(keyGroups, n);
      codec.encode(values, writer);
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
}

/** Offset of a records frame's `seq` (after the header and the count). */
const SEQ_OFFSET = FRAME_HEADER_BYTES + 4;

/**
 * The `seq` of a records frame, read from its header without decoding it; CONTROL_AT_HEAD for any
 * other frame (a watermark, status, barrier…); undefined for a frame too short for its header
 * (decoding it will say why).
 */
export function frameSeq(frame: Uint8Array): number | undefined {
  if (frame.length < 1) return undefined;
  if (frame[0] !== FrameType.records) return CONTROL_AT_HEAD;
  if (frame.length < SEQ_OFFSET + 4) return undefined;
  return (frame[SEQ_OFFSET]! | (frame[SEQ_OFFSET + 1]! << 8) | (frame[SEQ_OFFSET + 2]! << 16) | (frame[SEQ_OFFSET + 3]! << 24)) >>> 0;
}

/**
 * Decodes a frame for `channel`. Typed arrays of a records element (timestamps, key groups) may be
 * views of `frame`'s memory; the values never are. Throws CodecError CORRUPT_FRAME for anything
 * that is not such a frame.
 */
export function decodeElementFrame(frame: Uint8Array, codec: BatchCodec, channel: number): StreamElement {
  if (frame.length < FRAME_HEADER_BYTES) throw CodecError.corrupt(`a frame of ${frame.length} bytes is shorter than its header`);
  const reader = new ByteReader(frame.buffer, frame.byteOffset, frame.byteOffset + frame.length);
  const type = reader.u8();
  const version = reader.u8();
  if (version !== FRAME_VERSION) {
    throw CodecError.corrupt(`frame version ${version} is not supported (this Eddy speaks ${FRAME_VERSION})`);
  }
  const flags = reader.u16();
  const to = reader.u32();
  if (to !== channel) throw CodecError.corrupt(`a frame for channel ${to} arrived on channel ${channel}`);
  switch (type) {
    case FrameType.records: {
      if ((flags & ~(FLAG_KEY_GROUPS | FLAG_ONE_TIMESTAMP)) !== 0) throw CodecError.corrupt(`unknown record frame flags ${flags}`);
      const n = reader.u32();
      const seq = reader.u32();
      const one = (flags & FLAG_ONE_TIMESTAMP) !== 0;
      const timestamp = one ? reader.f64() : 0;
      const listed = one ? undefined : reader.f64Array(n);
      const keyGroups = (flags & FLAG_KEY_GROUPS) !== 0 ? reader.u16Array(n) : undefined;
      const values = codec.decode(reader, n);
      if (values.length !== n) {
        throw CodecError.corrupt(`codec '${codec.id}' decoded ${values.length} records, the frame holds ${n}`);
      }
      // After the values, so a corrupt count is refused before anything of its size is allocated.
      return { kind: "records", values, timestamps: listed ?? timestampsOf(timestamp, n), keyGroups, seq };
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
