/**
 * The error of every codec: a record that cannot be encoded (naming the field) or bytes that are
 * not a frame the codec wrote. Apart from codec.ts so that bytes.ts, which codecs build on, can
 * raise it without importing the codec contract.
 */
import { EddyError } from "../errors.ts";

export type CodecErrorCode = "RECORD_NOT_ENCODABLE" | "CORRUPT_FRAME";

export interface CodecErrorOptions {
  /** Index of the offending record within the batch, when known. */
  readonly recordIndex?: number;
  readonly cause?: unknown;
  /** Overrides the code's domain in ERROR_CODES ("user" when a user-supplied decoder threw). */
  readonly domain?: "user" | "internal";
}

export class CodecError extends EddyError {
  declare readonly code: CodecErrorCode;
  /**
   * Where in the record the problem is: `$` for the record itself, else e.g.
   * `payload.items[3].fn`, `tags<Map>[2].value`, `["odd key"]`. `$` for decode failures.
   */
  readonly path: string;
  readonly recordIndex: number | undefined;

  constructor(code: CodecErrorCode, message: string, path: string, options: CodecErrorOptions = {}) {
    super(code, message, { domain: options.domain, cause: options.cause });
    this.name = "CodecError";
    this.path = path;
    this.recordIndex = options.recordIndex;
  }

  /** A decode failure: the bytes are not something the codec wrote. */
  static corrupt(message: string, cause?: unknown): CodecError {
    return new CodecError("CORRUPT_FRAME", `corrupt frame: ${message}`, "$", { cause });
  }

  /** `problem` completes "<path> …", e.g. "is a function". */
  static notEncodable(path: string, problem: string, recordIndex?: number, cause?: unknown): CodecError {
    const where = recordIndex === undefined ? "" : ` (record ${recordIndex} of the batch)`;
    const subject = path === "$" ? "the record" : path;
    return new CodecError("RECORD_NOT_ENCODABLE", `cannot encode: ${subject} ${problem}${where}`, path, {
      ...(recordIndex === undefined ? {} : { recordIndex }),
      cause,
    });
  }
}
