/**
 * Batch codecs: how a batch of records becomes bytes that cross a worker thread and back.
 *
 * May import only from core/. Invariants: every batch encoding is self-describing (decodable
 * without earlier batches); decoders never read past their reader's end and refuse corrupt input
 * with CodecError "CORRUPT_FRAME"; encoders refuse what they cannot round-trip exactly with
 * CodecError "RECORD_NOT_ENCODABLE" naming the path, and never change a value silently. Wire
 * formats are versioned by codec id; each file documents its byte layout.
 */
export { ByteReader, ByteWriter } from "./bytes.ts";
export { CodecError, recordCodec, type BatchCodec, type CodecErrorCode, type RecordCodecSpec } from "./codec.ts";
export { defaultCodec } from "./default-codec.ts";
export { decodeValue, encodeValue, valueCodec } from "./value-codec.ts";
