/**
 * The error policy of one operator subtask at run time (core/error-policy.ts for the vocabulary,
 * docs/error-policy.md for the semantics). Operators call it only in the `catch` of their user
 * call, so a policy costs nothing per record until a record fails; under `fail` it throws exactly
 * what the operator threw before policies existed.
 */
import { badRecordError, type BadRecord } from "../connector/source.ts";
import type { Clock } from "../core/clock.ts";
import {
  DEAD_LETTERS,
  ERROR_POLICY_WINDOW_MS,
  FAIL_POLICY,
  type DeadLetter,
  type ErrorPolicySpec,
} from "../core/error-policy.ts";
import { EddyError, userFunctionError, type SubtaskOfOperator } from "../core/errors.ts";
import { hasTimestamp, NO_TIMESTAMP } from "../core/time.ts";
import type { Counter, Output } from "./operator.ts";

/** The counter of records an operator dropped under the `skip` policy. */
export const RECORDS_SKIPPED = "numRecordsSkipped";
/** The counter of records an operator sent to its dead-letter output. */
export const RECORDS_DEAD_LETTERED = "numRecordsDeadLettered";

export interface RecordErrorPolicy {
  /**
   * The user function (or key selector, or timestamp assigner) threw `cause` on `value`, whose
   * timestamp was `timestamp`. Under `fail`, and when the bound is exceeded, throws the error
   * that fails the job; otherwise returns, and the operator goes on with the next record.
   */
  onRecordError(cause: unknown, value: unknown, timestamp: number): void;
  /** A source's reader could not read `bad`: as onRecordError, for input that is not a record. */
  onBadRecord(bad: BadRecord): void;
}

export interface RecordErrorPolicyContext extends SubtaskOfOperator {
  /** Undefined: `fail`. */
  readonly errorPolicy?: ErrorPolicySpec | undefined;
  readonly clock: Clock;
  counter(name: string): Counter;
}

/** The policy of an operator, from its context; `output` takes its dead letters. */
export function recordErrorPolicy(ctx: RecordErrorPolicyContext, output: Output<unknown>): RecordErrorPolicy {
  const spec = ctx.errorPolicy ?? FAIL_POLICY;
  const operator = ctx.operatorName;
  const subtask = ctx.subtaskIndex;
  if (spec.policy === "fail") {
    return {
      onRecordError(cause) {
        throw userFunctionError(ctx, cause);
      },
      onBadRecord(bad) {
        throw badRecordError(operator, subtask, bad);
      },
    };
  }
  const deadLetter = spec.policy === "dead-letter";
  const counter = ctx.counter(deadLetter ? RECORDS_DEAD_LETTERED : RECORDS_SKIPPED);
  const bound = spec.maxPerMinute === undefined ? undefined : new SlidingWindowBound(spec.maxPerMinute, ERROR_POLICY_WINDOW_MS);
  const clock = ctx.clock;
  /** Counts one handled record, or throws when it would exceed the bound. */
  const admit = (error: EddyError): void => {
    if (bound !== undefined && !bound.admit(clock.now())) {
      throw new EddyError(
        "ERROR_POLICY_BOUND_EXCEEDED",
        `operator '${operator}' (subtask ${subtask}) would ${deadLetter ? "dead-letter" : "skip"} more than ${bound.max} records within a minute (its error policy's maxPerMinute); the last: ${error.message}`,
        { operator, subtask, cause: error },
      );
    }
    counter.inc();
  };
  return {
    onRecordError(cause, value, timestamp) {
      const error = userFunctionError(ctx, cause);
      admit(error);
      if (!deadLetter) return;
      const letter: DeadLetter = hasTimestamp(timestamp)
        ? { operator, subtask, error: { code: error.code, message: error.message }, value, timestamp }
        : { operator, subtask, error: { code: error.code, message: error.message }, value };
      output.collectSide(DEAD_LETTERS, letter, timestamp);
    },
    onBadRecord(bad) {
      const error = badRecordError(operator, subtask, bad);
      admit(error);
      if (!deadLetter) return;
      const text = typeof bad.raw === "string";
      const letter: DeadLetter = {
        operator,
        subtask,
        error: { code: error.code, message: error.message },
        raw: text ? (bad.raw as string) : Buffer.from(bad.raw as Uint8Array).toString("base64"),
        rawEncoding: text ? "text" : "base64",
        position: bad.position,
      };
      output.collectSide(DEAD_LETTERS, letter, NO_TIMESTAMP);
    },
  };
}

/**
 * At most `max` events within any `windowMs` (a sliding window): a ring of the last `max` event
 * times. An event is admitted unless the `max` events before it all happened less than `windowMs`
 * before it. Memory: 8 bytes × max, allocated at the first event. Times must not decrease.
 */
export class SlidingWindowBound {
  readonly max: number;
  readonly #windowMs: number;
  #times: Float64Array | undefined;
  /** Events admitted so far, up to max (then the ring is full). */
  #size = 0;
  /** Index of the oldest time once the ring is full; the next slot to write before that. */
  #next = 0;

  constructor(max: number, windowMs: number) {
    this.max = max;
    this.#windowMs = windowMs;
  }

  /** Records an event at `nowMs`; false (and nothing recorded) when it would be one too many. */
  admit(nowMs: number): boolean {
    const times = (this.#times ??= new Float64Array(this.max));
    if (this.#size < this.max) {
      times[this.#size++] = nowMs;
      return true;
    }
    if (nowMs - times[this.#next]! < this.#windowMs) return false;
    times[this.#next] = nowMs;
    this.#next = this.#next + 1 === this.max ? 0 : this.#next + 1;
    return true;
  }
}
