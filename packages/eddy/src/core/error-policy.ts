/**
 * Error policies for bad records (docs/error-policy.md): what an operator does with a record its
 * user function throws on (map, filter, flatMap, process, a keyed process function and its key
 * selector, a timestamp assigner), or with input its source cannot read
 * (`ReaderOutput.reportBadRecord`). Set per operator with `.onError(policy, options)`.
 *
 * The dead letters of an operator are a side output (DEAD_LETTERS): records like any other, so
 * they are partitioned, checkpointed and committed by whatever sink takes them.
 */
import { EddyError, type ErrorCode } from "./errors.ts";
import { OutputTag } from "./output-tag.ts";

/**
 * - `fail` (the default): the job fails (USER_FUNCTION_FAILED, BAD_RECORD, ...), as without a policy.
 * - `skip`: the record is dropped and counted (numRecordsSkipped).
 * - `dead-letter`: the record goes to the operator's dead-letter output and is counted
 *   (numRecordsDeadLettered).
 */
export type ErrorPolicy = "fail" | "skip" | "dead-letter";

export interface ErrorPolicyOptions {
  /**
   * The bound: the job fails with ERROR_POLICY_BOUND_EXCEEDED when a subtask of the operator
   * would skip or dead-letter more than this many records within 60,000 ms of processing time (a
   * sliding window: at the record whose `maxPerMinute` predecessors were all handled less than a
   * minute before it). Undefined: no bound.
   */
  readonly maxPerMinute?: number;
}

/** A policy with its options, checked: what a transformation and an operator context hold. */
export interface ErrorPolicySpec {
  readonly policy: ErrorPolicy;
  /** Undefined: no bound. Otherwise an integer ≥ 1. */
  readonly maxPerMinute: number | undefined;
}

export const FAIL_POLICY: ErrorPolicySpec = Object.freeze({ policy: "fail", maxPerMinute: undefined });

/** The width of the bound's sliding window. */
export const ERROR_POLICY_WINDOW_MS = 60_000;
/** The largest bound: its ring of handling times costs 8 bytes per record of the bound, per subtask. */
export const MAX_ERROR_POLICY_BOUND = 1_000_000;

/** Checks what `onError(policy, options)` was given. */
export function errorPolicySpec(policy: ErrorPolicy, options: ErrorPolicyOptions = {}): ErrorPolicySpec {
  if (policy !== "fail" && policy !== "skip" && policy !== "dead-letter") {
    throw new EddyError("INVALID_ERROR_POLICY", `onError needs "fail", "skip" or "dead-letter", got ${JSON.stringify(policy)}`);
  }
  if (options === null || typeof options !== "object") throw new EddyError("INVALID_ERROR_POLICY", "onError's options must be an object");
  const max = options.maxPerMinute;
  if (max !== undefined) {
    if (policy === "fail") throw new EddyError("INVALID_ERROR_POLICY", 'maxPerMinute bounds "skip" and "dead-letter"; "fail" fails at the first bad record');
    if (!Number.isInteger(max) || max < 1 || max > MAX_ERROR_POLICY_BOUND) {
      throw new EddyError("INVALID_ERROR_POLICY", `maxPerMinute must be an integer in [1, ${MAX_ERROR_POLICY_BOUND}], got ${String(max)}`);
    }
  }
  return policy === "fail" ? FAIL_POLICY : Object.freeze({ policy, maxPerMinute: max });
}

/**
 * A record an operator could not process, or input a source could not read. Plain data, so any
 * sink (a file of NDJSON, a collect sink) can take it; nothing in it depends on the wall clock,
 * so a run's dead letters are reproducible.
 */
export interface DeadLetter {
  /** The operator's name (`.name(...)`, or the default such as "Map"; for a source its name in fromSource). */
  readonly operator: string;
  readonly subtask: number;
  /** The error the `fail` policy would have failed the job with: its code and message. */
  readonly error: { readonly code: ErrorCode; readonly message: string };
  /** The input record the user function threw on (operators), as it was when the function returned. */
  readonly value?: unknown;
  /** What a source read and could not turn into a record: text as is, bytes in base64 (`rawEncoding`). */
  readonly raw?: string;
  readonly rawEncoding?: "text" | "base64";
  /** Where a source read it (e.g. `{ file, line }`), as its reader reported it. */
  readonly position?: Readonly<Record<string, string | number>>;
  /** The record's event-time timestamp (ms), when it had one. */
  readonly timestamp?: number;
}

/** The side output every operator with the `dead-letter` policy emits its dead letters to; `stream.deadLetters()` reads it. */
export const DEAD_LETTERS = new OutputTag<DeadLetter>("eddy.dead-letters");
