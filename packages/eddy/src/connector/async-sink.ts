/**
 * A base for sinks that send records in batches to a service whose client returns promises (a
 * database's bulk insert, an HTTP API, a message broker), in the spirit of Flink's AsyncSinkBase
 * (FLIP-171). The sink supplies two functions: how a record becomes a request entry, and how a
 * batch of entries is sent; the writer does the rest:
 *
 * - Batching: entries are buffered and sent `maxBatchSize` at a time, or fewer once the oldest
 *   has waited `maxTimeInBufferMs`.
 * - Bounds: at most `maxInFlightRequests` batches in flight (more wait in the buffer) and
 *   `maxBufferedRequests` entries buffered; once the buffer is full, `write` returns a promise and
 *   the task reads no more input until a request settles and makes room (backpressure, never
 *   unbounded memory).
 * - Failures: `submit` resolves with the entries the service refused (a partial failure), which
 *   are sent again; a rejection that `isRetryable` accepts sends the whole batch again, after a
 *   backoff doubling from `initialBackoffMs` to `maxBackoffMs`, at most `maxAttempts` times; any
 *   other rejection (or the last attempt's) fails the task.
 * - Checkpoints: the entries buffered or in flight at a barrier are the writer's state
 *   (`snapshotState`), sent again by the restored writer, so nothing accepted by `write` is lost.
 *   Entries in flight at the barrier that the service had accepted are sent twice after a
 *   restore: the guarantee is at-least-once, and exactly-once where the service makes a repeated
 *   entry harmless (an idempotent write: an upsert by key, a deduplicating id).
 * - The end of input: `flush(true)` resolves once every entry is accepted.
 *
 * Entries must be plain data (they are stored in checkpoints with the value codec).
 */
import { describeCause, EddyError } from "../core/errors.ts";
import { ConditionWaiters } from "./condition-waiters.ts";
import type { Sink, SinkContext, SinkWriter } from "./sink.ts";

export interface AsyncSinkOptions<T, E> {
  /** A record as the entry of a request (e.g. a row, a message); plain data. */
  readonly toEntry: (value: T, timestamp: number | undefined, context: SinkContext) => E;
  /**
   * Sends a batch. Resolves with the entries the service refused and that should be sent again
   * (or with nothing when it accepted all); rejects when the request as a whole failed.
   */
  readonly submit: (batch: readonly E[], context: SinkContext) => Promise<readonly E[] | void>;
  /** Whether a rejection of `submit` may succeed when the batch is sent again (default: never). */
  readonly isRetryable?: (error: unknown) => boolean;
  /** Entries per request (default 500). */
  readonly maxBatchSize?: number;
  /** Requests in flight at once (default 10). */
  readonly maxInFlightRequests?: number;
  /** Entries buffered, not yet sent (default 10,000); at least maxBatchSize. */
  readonly maxBufferedRequests?: number;
  /** How long an entry waits for its batch to fill before a smaller batch is sent (default 1,000 ms). */
  readonly maxTimeInBufferMs?: number;
  /** Sending a batch whose request failed with a retryable error, in all (default 10). */
  readonly maxAttempts?: number;
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
}

/** A sink of `AsyncSinkWriter`s: at-least-once, with the bounds and retries of `options`. */
export function asyncSink<T, E>(options: AsyncSinkOptions<T, E>): Sink<T> {
  return { createWriter: (context) => new AsyncSinkWriter(options, context) };
}

export class AsyncSinkWriter<T, E> implements SinkWriter<T> {
  readonly #o: Required<Omit<AsyncSinkOptions<T, E>, "isRetryable">> & Pick<AsyncSinkOptions<T, E>, "isRetryable">;
  readonly #context: SinkContext;
  /** Entries not yet sent, oldest first. */
  #buffer: E[] = [];
  /** Batches sent and not yet settled (what a snapshot holds besides the buffer). */
  readonly #inFlight = new Set<readonly E[]>();
  /** Sends a partial batch when its oldest entry has waited maxTimeInBufferMs. */
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The failure that ends the writer (a fatal error, or retries exhausted); every later call rejects with it. */
  #failure: EddyError | undefined;
  /** A flush asked for everything to be sent: what the in-flight bound held back goes once requests settle. */
  #flushing = false;
  /** Notified whenever the buffer shrinks, a request settles or the writer fails. */
  readonly #waiters = new ConditionWaiters(() => this.#failure);

  constructor(options: AsyncSinkOptions<T, E>, context: SinkContext) {
    const maxBatchSize = options.maxBatchSize ?? 500;
    this.#o = {
      toEntry: options.toEntry,
      submit: options.submit,
      isRetryable: options.isRetryable,
      maxBatchSize,
      maxInFlightRequests: options.maxInFlightRequests ?? 10,
      maxBufferedRequests: Math.max(options.maxBufferedRequests ?? 10_000, maxBatchSize),
      maxTimeInBufferMs: options.maxTimeInBufferMs ?? 1_000,
      maxAttempts: options.maxAttempts ?? 10,
      initialBackoffMs: options.initialBackoffMs ?? 100,
      maxBackoffMs: options.maxBackoffMs ?? 10_000,
    };
    for (const [name, value] of Object.entries(this.#o)) {
      if (typeof value === "number" && !(Number.isInteger(value) && value >= (name.endsWith("Ms") ? 0 : 1))) {
        throw new EddyError("INVALID_SINK_OPTIONS", `asyncSink: ${name} must be a ${name.endsWith("Ms") ? "non-negative" : "positive"} integer, got ${value}`);
      }
    }
    this.#context = context;
    // Entries buffered or in flight at the checkpoint the job restores from: sent again.
    for (const entry of (context.restoredState ?? []) as E[]) this.#buffer.push(entry);
    if (this.#buffer.length > 0) this.#armTimer();
  }

  write(value: T, timestamp: number | undefined): void | Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    this.#buffer.push(this.#o.toEntry(value, timestamp, this.#context));
    if (this.#buffer.length === 1) this.#armTimer();
    this.#sendFullBatches();
    if (this.#hasRoom()) return;
    // Full: the task waits until a request settles and makes room.
    return this.#until(() => this.#hasRoom());
  }

  /** Sends everything; with `endOfInput`, resolves once every entry is accepted. */
  flush(endOfInput: boolean): void | Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    this.#flushing = true;
    this.#sendAll();
    if (!endOfInput) return;
    return this.#until(() => this.#buffer.length === 0 && this.#inFlight.size === 0);
  }

  /**
   * The entries buffered or in flight at the barrier (see the file comment: at-least-once). A
   * writer that failed fails the task here at the latest, when no record came to a write since.
   */
  snapshotState(): readonly E[] {
    if (this.#failure !== undefined) throw this.#failure;
    const state: E[] = [];
    for (const batch of this.#inFlight) state.push(...batch);
    state.push(...this.#buffer);
    return state;
  }

  close(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#failure ??= new EddyError("SINK_CLOSED", `sink '${this.#context.operatorName}' (subtask ${this.#context.subtaskIndex}) is closed`);
    this.#notify();
  }

  /** Whether the buffer takes more (requests in flight bound what is sent, the buffer what is written). */
  #hasRoom(): boolean {
    return this.#buffer.length < this.#o.maxBufferedRequests;
  }

  #until(ready: () => boolean): Promise<void> {
    return this.#waiters.until(ready);
  }

  #notify(): void {
    this.#waiters.notify();
  }

  #armTimer(): void {
    if (this.#timer !== undefined || this.#o.maxTimeInBufferMs === 0) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#sendAll();
    }, this.#o.maxTimeInBufferMs);
  }

  #sendFullBatches(): void {
    while (this.#buffer.length >= this.#o.maxBatchSize && this.#inFlight.size < this.#o.maxInFlightRequests) {
      this.#send(this.#buffer.splice(0, this.#o.maxBatchSize));
    }
  }

  /** Sends what the in-flight bound allows, full batches first, then the rest as a smaller one. */
  #sendAll(): void {
    if (this.#buffer.length === 0) this.#flushing = false;
    this.#sendFullBatches();
    if (this.#buffer.length > 0 && this.#inFlight.size < this.#o.maxInFlightRequests) this.#send(this.#buffer.splice(0));
    if (this.#buffer.length > 0) this.#armTimer();
  }

  #send(batch: readonly E[], attempt = 1): void {
    if (this.#failure !== undefined) return;
    this.#inFlight.add(batch);
    this.#notify();
    const settle = (): void => {
      this.#inFlight.delete(batch);
    };
    let submitted: Promise<readonly E[] | void>;
    try {
      submitted = this.#o.submit(batch, this.#context);
    } catch (e) {
      submitted = Promise.reject(e);
    }
    submitted.then(
      (refused) => {
        settle();
        // Refused entries go to the front: they are older than anything buffered since.
        if (refused !== undefined && refused.length > 0) {
          this.#buffer.unshift(...refused);
          this.#armTimer();
        }
        if (this.#flushing) {
          this.#sendAll();
          if (this.#buffer.length === 0) this.#flushing = false;
        } else {
          this.#sendFullBatches();
        }
        this.#notify();
      },
      (e: unknown) => {
        const retryable = this.#o.isRetryable?.(e) === true;
        if (!retryable || attempt >= this.#o.maxAttempts) {
          settle();
          this.#failure ??= new EddyError(
            "SINK_WRITE_FAILED",
            `sink '${this.#context.operatorName}' (subtask ${this.#context.subtaskIndex}) could not send ${batch.length} entries${retryable ? ` after ${attempt} attempts` : ""}: ${describeCause(e)}`,
            { operator: this.#context.operatorName, subtask: this.#context.subtaskIndex, cause: e },
          );
          this.#notify();
          return;
        }
        // Still in flight while it waits: a snapshot meanwhile keeps it.
        const backoff = Math.min(this.#o.initialBackoffMs * 2 ** (attempt - 1), this.#o.maxBackoffMs);
        setTimeout(() => {
          settle();
          this.#send(batch, attempt + 1);
        }, backoff);
      },
    );
  }
}
