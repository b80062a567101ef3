/**
 * The user-facing contract of async I/O (api/async-data-stream.ts): the async function, the
 * operator's options and its retry strategy, with the validation that turns options into the
 * settings the operator runs with (Flink: AsyncFunction, AsyncRetryStrategies).
 */
import { EddyError } from "../core/errors.ts";
import type { RuntimeContext } from "./functions.ts";

/**
 * Sends one request per record. Flink's AsyncFunction, with the result as a promise instead of a
 * ResultFuture. A plain object (or class instance) is copied per subtask, as every function
 * object is, so a client created in `open()` belongs to one subtask.
 */
export interface AsyncFunction<IN, OUT> {
  /** Called once per subtask before the first request (create the client here). */
  open?(context: RuntimeContext): void;
  /**
   * The request for `value`: a promise of its results (zero or more, an array or any iterable),
   * which the operator emits with the input record's timestamp. May be called again for the same
   * value: by a retry, and after a restore for requests that were in flight at the checkpoint.
   */
  asyncInvoke(value: IN): PromiseLike<Iterable<OUT>>;
  /**
   * The request for `value` did not complete within `timeoutMs` (retries included): the results
   * to emit instead (e.g. a fallback), or throw to fail the record. Without it, a timeout fails the
   * record (ASYNC_IO_TIMEOUT), and the record's error policy applies.
   */
  timeout?(value: IN): Iterable<OUT>;
  close?(): void;
}

/** A function `value => Promise<results>`, or an AsyncFunction object. */
export type AsyncFunctionLike<IN, OUT> = ((value: IN) => PromiseLike<Iterable<OUT>>) | AsyncFunction<IN, OUT>;

/**
 * When and how often a request is sent again (Flink's AsyncRetryStrategies). Delays are
 * processing time, from the operator's clock; the record's timeout covers all its attempts.
 */
export interface AsyncRetryOptions<OUT> {
  /** Attempts in all, the first included (≥ 1; 1: no retry). */
  readonly maxAttempts: number;
  /** `fixed`: every retry waits `delayMs`; `exponential`: `delayMs`, then × `multiplier` each time, at most `maxDelayMs`. */
  readonly backoff: "fixed" | "exponential";
  readonly delayMs: number;
  /** Exponential backoff only (required there): the longest wait. */
  readonly maxDelayMs?: number;
  /** Exponential backoff only: ≥ 1, default 2. */
  readonly multiplier?: number;
  /** Whether a rejection is worth another attempt (default: every rejection is). */
  readonly ifError?: (error: unknown) => boolean;
  /** Whether a result is worth another attempt (e.g. empty); default: no result is. The last attempt's result is emitted as it is. */
  readonly ifResult?: (results: readonly OUT[]) => boolean;
}

export interface AsyncIoOptions<OUT> {
  /** How long a record's request may take, retries included (> 0; Infinity: no limit). */
  readonly timeoutMs: number;
  /** Records (and watermarks) in the operator at once per subtask, default 100; when full, the task takes no input. */
  readonly capacity?: number;
  readonly retry?: AsyncRetryOptions<OUT>;
}

/** What the operator runs with, validated. */
export interface AsyncWaitSettings<OUT> {
  readonly ordered: boolean;
  readonly timeoutMs: number;
  readonly capacity: number;
  readonly retry: AsyncRetryStrategy<OUT> | undefined;
}

export interface AsyncRetryStrategy<OUT> {
  readonly maxAttempts: number;
  /** The wait before attempt `failedAttempts + 1`, after `failedAttempts` (≥ 1) attempts. */
  backoffMs(failedAttempts: number): number;
  retryOnError(error: unknown): boolean;
  retryOnResult(results: readonly OUT[]): boolean;
}

export const DEFAULT_ASYNC_CAPACITY = 100;

const invalid = (message: string): EddyError => new EddyError("INVALID_ASYNC_IO_OPTIONS", message);

const OPTION_KEYS = new Set(["timeoutMs", "capacity", "retry"]);
const RETRY_KEYS = new Set(["maxAttempts", "backoff", "delayMs", "maxDelayMs", "multiplier", "ifError", "ifResult"]);

function refuseUnknown(options: object, known: Set<string>, where: string): void {
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw invalid(`${where}: unknown option '${key}' (known: ${[...known].join(", ")})`);
  }
}

/** The function object of `fn` (a bare function becomes `{ asyncInvoke: fn }`), checked. */
export function asyncFunctionOf<IN, OUT>(fn: AsyncFunctionLike<IN, OUT>, what: string): AsyncFunction<IN, OUT> {
  if (typeof fn === "function") return { asyncInvoke: fn };
  if (fn === null || typeof fn !== "object" || typeof (fn as { asyncInvoke?: unknown }).asyncInvoke !== "function") {
    throw invalid(`${what} needs a function (value) => Promise<results> or an object with asyncInvoke(value), got ${fn === null ? "null" : typeof fn}`);
  }
  for (const hook of ["open", "timeout", "close"] as const) {
    const h = (fn as unknown as Record<string, unknown>)[hook];
    if (h !== undefined && typeof h !== "function") throw invalid(`${what}: the async function's '${hook}' must be a function, got ${typeof h}`);
  }
  return fn;
}

export function asyncWaitSettings<OUT>(options: AsyncIoOptions<OUT>, ordered: boolean, what: string): AsyncWaitSettings<OUT> {
  if (options === null || typeof options !== "object") throw invalid(`${what} needs options { timeoutMs, capacity?, retry? }`);
  refuseUnknown(options, OPTION_KEYS, what);
  const { timeoutMs, capacity = DEFAULT_ASYNC_CAPACITY, retry } = options;
  if (typeof timeoutMs !== "number" || !(timeoutMs > 0)) throw invalid(`${what}: timeoutMs must be a number > 0 (Infinity: no timeout), got ${String(timeoutMs)}`);
  if (!Number.isSafeInteger(capacity) || capacity < 1) throw invalid(`${what}: capacity must be an integer ≥ 1, got ${String(capacity)}`);
  return { ordered, timeoutMs, capacity, retry: retry === undefined ? undefined : retryStrategy(retry, what) };
}

function retryStrategy<OUT>(retry: AsyncRetryOptions<OUT>, what: string): AsyncRetryStrategy<OUT> {
  if (retry === null || typeof retry !== "object") throw invalid(`${what}: retry must be an object { maxAttempts, backoff, delayMs, ... }`);
  refuseUnknown(retry, RETRY_KEYS, `${what} retry`);
  const { maxAttempts, backoff, delayMs, ifError, ifResult } = retry;
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1) throw invalid(`${what}: retry.maxAttempts must be an integer ≥ 1 (attempts in all), got ${String(maxAttempts)}`);
  if (typeof delayMs !== "number" || !Number.isFinite(delayMs) || delayMs < 0) throw invalid(`${what}: retry.delayMs must be a finite number ≥ 0, got ${String(delayMs)}`);
  if (ifError !== undefined && typeof ifError !== "function") throw invalid(`${what}: retry.ifError must be a function (error) => boolean`);
  if (ifResult !== undefined && typeof ifResult !== "function") throw invalid(`${what}: retry.ifResult must be a function (results) => boolean`);
  let backoffMs: (failedAttempts: number) => number;
  if (backoff === "fixed") {
    if (retry.maxDelayMs !== undefined || retry.multiplier !== undefined) throw invalid(`${what}: retry.maxDelayMs and retry.multiplier apply to backoff "exponential" only`);
    backoffMs = () => delayMs;
  } else if (backoff === "exponential") {
    const { maxDelayMs, multiplier = 2 } = retry;
    if (typeof maxDelayMs !== "number" || !Number.isFinite(maxDelayMs) || maxDelayMs < delayMs) {
      throw invalid(`${what}: retry.maxDelayMs must be a finite number ≥ delayMs (${delayMs}) for backoff "exponential", got ${String(maxDelayMs)}`);
    }
    if (typeof multiplier !== "number" || !Number.isFinite(multiplier) || multiplier < 1) throw invalid(`${what}: retry.multiplier must be a finite number ≥ 1, got ${String(multiplier)}`);
    backoffMs = (failedAttempts) => Math.min(maxDelayMs, delayMs * multiplier ** (failedAttempts - 1));
  } else {
    throw invalid(`${what}: retry.backoff must be "fixed" or "exponential", got ${String(backoff)}`);
  }
  return {
    maxAttempts,
    backoffMs,
    retryOnError: ifError ?? (() => true),
    retryOnResult: ifResult ?? (() => false),
  };
}
