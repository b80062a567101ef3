/**
 * The contract of a batch codec — how a batch of records becomes bytes that cross a worker
 * thread and back — its error type, and `recordCodec`, the adapter for user-supplied per-record
 * codecs (Avro, Protobuf, …).
 *
 * Wire format of `recordCodec` (id: the user's id), appended at the writer's current offset:
 *
 *   count × ( varuint byteLength, byteLength bytes of `encode(record)` )
 *
 * The record count is not written; the frame layer carries it and passes it to `decode`.
 */
import type { ByteReader, ByteWriter } from "./bytes.ts";

export interface BatchCodec {
  /** Stable id of the wire format, e.g. "eddy.default/3". A format change gets a new id. */
  readonly id: string;
  /**
   * Appends the encoding of `values` to `out`, starting at its current offset (not necessarily
   * 0 or aligned). Throws CodecError "RECORD_NOT_ENCODABLE" naming the first bad field (record
   * index and path) for a value it cannot encode; `out` then holds a partial encoding and must
   * be reset by the caller.
   */
  encode(values: readonly unknown[], out: ByteWriter): void;
  /**
   * Reads `count` values that `encode` wrote, from `input`'s current offset, and advances it.
   * Throws CodecError "CORRUPT_FRAME" for bytes `encode` cannot have written (as far as it can
   * tell; there is no checksum) and never reads past the reader's end.
   */
  decode(input: ByteReader, count: number): unknown[];
}
// Every batch is self-describing: decoding needs no state from earlier batches. A codec instance
// may cache derived things (generated encoders/decoders per record shape) across batches; it is
// used by one thread and never concurrently.

export { CodecError, type CodecErrorCode, type CodecErrorOptions } from "./codec-error.ts";
import { CodecError } from "./codec-error.ts";

/** Wraps anything a decoder threw that is not already a CodecError. */
export function asCorrupt(cause: unknown): CodecError {
  if (cause instanceof CodecError) return cause;
  return CodecError.corrupt(cause instanceof Error ? cause.message : String(cause), cause);
}

export interface RecordCodecSpec<T> {
  readonly id: string;
  encode(value: T): Uint8Array;
  /** `bytes` may be a view into the batch buffer: copy it to keep it beyond the call. */
  decode(bytes: Uint8Array): T;
}

/** Adapts a per-record codec to a BatchCodec: length-prefixed records. */
export function recordCodec<T>(spec: RecordCodecSpec<T>): BatchCodec {
  return {
    id: spec.id,
    encode(values, out) {
      for (let i = 0; i < values.length; i++) {
        let bytes: Uint8Array;
        try {
          bytes = spec.encode(values[i] as T);
        } catch (cause) {
          // A user codec built on Eddy's encoders already names the path: keep it.
          if (cause instanceof CodecError && cause.code === "RECORD_NOT_ENCODABLE") {
            throw new CodecError(cause.code, `${cause.message} (record ${i} of the batch)`, cause.path, { recordIndex: i, cause });
          }
          const reason = cause instanceof Error ? cause.message : String(cause);
          throw CodecError.notEncodable("$", `was refused by codec '${spec.id}': ${reason}`, i, cause);
        }
        if (!(bytes instanceof Uint8Array)) {
          throw CodecError.notEncodable("$", `was encoded by codec '${spec.id}' to a non-Uint8Array`, i);
        }
        out.varuint(bytes.length);
        out.bytes(bytes);
      }
    },
    decode(input, count) {
      input.checkCount(count, 1, "records");
      const values = new Array<unknown>(count);
      for (let i = 0; i < count; i++) {
        const bytes = input.bytes(input.varuint());
        try {
          values[i] = spec.decode(bytes);
        } catch (cause) {
          const reason = cause instanceof Error ? cause.message : String(cause);
          throw new CodecError("CORRUPT_FRAME", `codec '${spec.id}' failed to decode record ${i}: ${reason}`, "$", {
            recordIndex: i,
            cause,
            domain: "user",
          });
        }
      }
      return values;
    },
  };
}
