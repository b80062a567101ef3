/**
 * The one error type of Eddy. Every failure carries a stable `code`, a `domain` saying whose
 * fault it is, and a retry hint, so the restart strategy, the CLI and the UI can act on it
 * without parsing messages. The codes, and each one's domain and retry hint, are the closed set
 * in error-codes.ts.
 */
import "./single-copy.ts";
import { errorCodeSpec, type ErrorCode, type ErrorDomain } from "./error-codes.ts";

export type { ErrorCode, ErrorDomain } from "./error-codes.ts";

export interface EddyErrorOptions {
  /** Overrides the code's domain where the failure is someone else's fault here (say why). */
  readonly domain?: ErrorDomain;
  /** Overrides the code's retry hint: whether restarting the failed task may succeed. */
  readonly retryable?: boolean;
  /** Operator name the failure happened in, when known. */
  readonly operator?: string;
  /** Subtask index the failure happened in, when known. */
  readonly subtask?: number;
  /** The parallelism of that operator (how many subtasks it has), when known. */
  readonly parallelism?: number;
  readonly cause?: unknown;
}

export class EddyError extends Error {
  readonly code: ErrorCode;
  readonly domain: ErrorDomain;
  readonly retryable: boolean;
  readonly operator: string | undefined;
  readonly subtask: number | undefined;
  readonly parallelism: number | undefined;

  constructor(code: ErrorCode, message: string, options: EddyErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const spec = errorCodeSpec(code);
    this.name = "EddyError";
    this.code = code;
    this.domain = options.domain ?? spec.domain;
    this.retryable = options.retryable ?? spec.retryable;
    this.operator = options.operator;
    this.subtask = options.subtask;
    this.parallelism = options.parallelism;
  }
}

/** Renders a thrown value as a one-line description without internals. */
export function describeCause(cause: unknown): string {
  if (cause instanceof Error) return `${cause.name}: ${cause.message}`;
  return String(cause);
}

/** Where in a job a user function runs: an operator context has these fields. */
export interface SubtaskOfOperator {
  readonly operatorName: string;
  /** 0-based. */
  readonly subtaskIndex: number;
  readonly parallelism: number;
}

/** "subtask 1 of 4": indices are 0-based everywhere in Eddy, so the parallelism says how many there are. */
export function describeSubtask(subtask: number, parallelism: number | undefined): string {
  return parallelism === undefined ? `subtask ${subtask}` : `subtask ${subtask} of ${parallelism}`;
}

/**
 * Wraps a failure of user code once, naming the operator and subtask. An error that is already
 * an EddyError with an operator is returned as is, so nesting never produces "in X: in X: ...".
 * Where the user's code failed (file:line:column) is in the cause's stack (user-frames.ts).
 */
export function userFunctionError(where: SubtaskOfOperator, cause: unknown): EddyError {
  if (cause instanceof EddyError && cause.operator !== undefined) return cause;
  const operator = where.operatorName;
  const subtask = where.subtaskIndex;
  const parallelism = where.parallelism;
  const at = `operator '${operator}', ${describeSubtask(subtask, parallelism)}`;
  if (cause instanceof EddyError) {
    return new EddyError(cause.code, `${cause.message} (${at})`, {
      domain: cause.domain,
      retryable: cause.retryable,
      operator,
      subtask,
      parallelism,
      cause: cause.cause ?? cause,
    });
  }
  // A function object is copied per subtask, and a copy has no #private slots (README); a
  // factory makes real instances instead (runtime/operators/function-instance.ts).
  const hint =
    cause instanceof TypeError && /private member/.test(cause.message)
      ? " (function objects are copied per subtask and a copy has no #private fields: pass a factory, e.g. process(() => new MyFunction()), or use ordinary fields)"
      : "";
  return new EddyError(
    "USER_FUNCTION_FAILED",
    `user function failed in operator '${operator}' (${describeSubtask(subtask, parallelism)}): ${describeCause(cause)}${hint}`,
    { operator, subtask, parallelism, cause },
  );
}
