/**
 * Async I/O (Flink's AsyncWaitOperator): calls an async function per record, keeps up to
 * `capacity` records and watermarks in a queue (async-wait-queue.ts) while their requests are in
 * flight, and emits each record's results with the record's timestamp, in input order (ordered)
 * or as they complete between watermarks (unordered).
 *
 * Threads: the task never waits on the thread. A request's promise settles in a microtask, which
 * only notes the outcome; everything else (retry decisions, the timeout handler, emitting, error
 * policy) runs in mail on the task thread. The outcomes that arrive in one turn of the event loop
 * are applied by one mail, posted from `setImmediate` by the first of them: answers read from
 * sockets in one poll phase (or settled in one check phase) then cost one round of the task, not
 * one each. Posted directly, each answer woke the task for itself, which made the operator ~2-3×
 * slower per record (bench/async-io.ts, "next-turn" requests; docs/benchmarks.md).
 *
 * Backpressure: with `capacity` elements queued, an arriving element waits in `overflow` and the
 * operator registers blocking work (OperatorContext.awaitWork), so the task reads no more input.
 * The task stops at the next element, not the next record, so `overflow` holds at most the rest
 * of one input batch — of one source poll (up to 1,024 records) when chained to a source — or what
 * a restore brought back; it is admitted as the queue empties, and it is in every checkpoint.
 *
 * Timeouts: `timeoutMs` is the same for every record and records are issued in time order, so
 * their deadlines are too: one clock timer, armed for the oldest pending deadline, replaces a
 * timer per record. A completed record leaves `deadlines` once the records issued before it have
 * completed too (so it holds the records issued since the oldest incomplete one).
 *
 * Checkpoints: at a barrier the inputs of every element not yet emitted — in flight, completed
 * but held back by order, waiting in `overflow`, watermarks included — are the operator state
 * ASYNC_WAIT_STATE, in queue order; a restore issues them again (in `open`), so no input is lost
 * and results already emitted before the barrier are not emitted again by this operator.
 *
 * End of input: blocking work until the queue is empty, so the task finishes (and the next chained
 * operator ends its input) only after the last result is emitted.
 */
import type { ScheduledCallback } from "../../core/clock.ts";
import { describeCause, EddyError, userFunctionError } from "../../core/errors.ts";
import { RingBuffer } from "../../core/ring-buffer.ts";
import { copyValue } from "../../state/copy-value.ts";
import { asyncFunctionOf, type AsyncFunctionLike, type AsyncWaitSettings } from "../async-function.ts";
import type { OneInputOperator, OperatorContext, Output } from "../operator.ts";
import { isThenable } from "../pending-work.ts";
import { recordErrorPolicy } from "../record-error-policy.ts";
import { callUser, runtimeContextOf } from "./process-operator.ts";
import { perSubtaskInstance } from "./function-instance.ts";
import { orderedQueue, unorderedQueue, type QueuedRecord, type QueuedWatermark, type QueueElement } from "./async-wait-queue.ts";

/** Operator state name of the inputs not yet emitted at a barrier. */
export const ASYNC_WAIT_STATE = "async-wait-queue";
/** Version of the elements of ASYNC_WAIT_STATE. */
const STATE_VERSION = 1;
/** Counter of requests sent again by the retry strategy. */
export const ASYNC_RETRIES = "numAsyncRetries";
/** Counter of records whose request timed out (handled by `timeout()` or not). */
export const ASYNC_TIMEOUTS = "numAsyncTimeouts";

/** One element of ASYNC_WAIT_STATE, version 1 (docs/design/async-wait-state.md). */
type StoredElement =
  | { readonly v: 1; readonly kind: "record"; readonly value: unknown; readonly timestamp: number }
  | { readonly v: 1; readonly kind: "watermark"; readonly watermark: number };

/** A restored element, checked: the checkpoint is input, not trusted. */
function parseStoredElement(e: unknown, operator: string, subtask: number): StoredElement {
  const where = `async I/O operator '${operator}' (subtask ${subtask}): an element of its state '${ASYNC_WAIT_STATE}'`;
  if (e === null || typeof e !== "object") throw new EddyError("CHECKPOINT_CORRUPT", `${where} is not an object`, { operator, subtask });
  const o = e as Record<string, unknown>;
  if (o.v !== STATE_VERSION) {
    throw new EddyError("CHECKPOINT_UNSUPPORTED", `${where} has version ${String(o.v)}; this Eddy reads version ${STATE_VERSION}`, { operator, subtask });
  }
  if (o.kind === "record" && typeof o.timestamp === "number" && "value" in o) return e as StoredElement;
  if (o.kind === "watermark" && typeof o.watermark === "number") return e as StoredElement;
  throw new EddyError("CHECKPOINT_CORRUPT", `${where} is neither a record { kind, value, timestamp } nor a watermark { kind, watermark }`, { operator, subtask });
}

const ARRIVED_OK = 0;
const ARRIVED_ERROR = 1;
/** The function broke its contract (no promise, or not a list of results): not retried. */
const ARRIVED_INVALID = 2;
type Arrival = typeof ARRIVED_OK | typeof ARRIVED_ERROR | typeof ARRIVED_INVALID;

const NO_RESULTS: readonly never[] = [];

/** A record whose request is in flight, waiting to be retried, or complete but not yet emitted. */
class PendingRecord<IN, OUT> implements QueuedRecord {
  readonly isWatermark = false as const;
  done = false;
  readonly value: IN;
  readonly timestamp: number;
  /** When its request times out: set when it is issued (not when it arrives: it may wait in overflow). */
  deadlineMs = Number.POSITIVE_INFINITY;
  /** Attempts started; an outcome of an earlier attempt (timed out meanwhile) is ignored. */
  attempt = 0;
  results: readonly OUT[] = NO_RESULTS;
  /** Set by the microtask of the current attempt, read by the mail (then reset for a retry). */
  arrival: Arrival | undefined = undefined;
  payload: unknown = undefined;
  retryTimer: ScheduledCallback | undefined = undefined;

  constructor(value: IN, timestamp: number) {
    this.value = value;
    this.timestamp = timestamp;
  }
}

/** A settable promise, for the operator's blocking and background work. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Results as an array; undefined when `payload` is not a list of results (a string is not). */
function resultsOf<OUT>(payload: unknown): readonly OUT[] | undefined {
  if (Array.isArray(payload)) return payload as OUT[];
  if (payload === null || typeof payload !== "object" || typeof (payload as Iterable<OUT>)[Symbol.iterator] !== "function") return undefined;
  return Array.from(payload as Iterable<OUT>);
}

const describeValue = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

export function asyncWaitOperator<IN, OUT>(userFn: AsyncFunctionLike<IN, OUT>, settings: AsyncWaitSettings<OUT>) {
  return (ctx: OperatorContext, output: Output<OUT>): OneInputOperator<IN> => {
    const fn = perSubtaskInstance(asyncFunctionOf(userFn, "async I/O"));
    const { capacity, timeoutMs, retry } = settings;
    const hasTimeout = Number.isFinite(timeoutMs);
    const clock = ctx.clock;
    const errors = recordErrorPolicy(ctx, output as Output<unknown>);
    const retries = ctx.counter(ASYNC_RETRIES);
    const timeouts = ctx.counter(ASYNC_TIMEOUTS);
    const queue = (settings.ordered ? orderedQueue : unorderedQueue)<PendingRecord<IN, OUT>>({
      emitRecord(r) {
        const results = r.results;
        for (let i = 0; i < results.length; i++) output.collect(results[i]!, r.timestamp);
      },
      emitWatermark: (w) => output.emitWatermark(w),
    });
    /** Elements that arrived while the queue was full, in arrival order. */
    const overflow = new RingBuffer<QueueElement<PendingRecord<IN, OUT>>>(16);
    /** Issued records by deadline (= issue order); see the file comment. */
    const deadlines = new RingBuffer<PendingRecord<IN, OUT>>(16);
    let deadlineTimer: ScheduledCallback | undefined;
    /** Records whose outcome arrived, for the next mail; swapped with `spare` while applied. */
    let arrivals: PendingRecord<IN, OUT>[] = [];
    let spare: PendingRecord<IN, OUT>[] = [];
    let arrivalMailPosted = false;
    /** Records issued and not complete (in flight or waiting for a retry). */
    let incomplete = 0;
    /** Background work while `incomplete > 0`: the task does not end before its requests. */
    let busy: ReturnType<typeof deferred> | undefined;
    /** Blocking work while `overflow` is not empty. */
    let room: ReturnType<typeof deferred> | undefined;
    /** Blocking work from endInput until everything is emitted. */
    let drained: ReturnType<typeof deferred> | undefined;
    let closed = false;

    const postArrivals = (): void => ctx.postMail(applyArrivals);
    const arrive = (r: PendingRecord<IN, OUT>, attempt: number, arrival: Arrival, payload: unknown): void => {
      if (closed || r.done || r.attempt !== attempt || r.arrival !== undefined) return;
      r.arrival = arrival;
      r.payload = payload;
      arrivals.push(r);
      if (!arrivalMailPosted) {
        arrivalMailPosted = true;
        // Once per event-loop turn, not per answer: see the file comment.
        setImmediate(postArrivals);
      }
    };

    const invoke = (r: PendingRecord<IN, OUT>): void => {
      const attempt = ++r.attempt;
      r.arrival = undefined;
      let request: unknown;
      try {
        request = fn.asyncInvoke(r.value);
      } catch (e) {
        arrive(r, attempt, ARRIVED_ERROR, e);
        return;
      }
      if (!isThenable(request)) {
        arrive(r, attempt, ARRIVED_INVALID, new TypeError(`asyncInvoke must return a promise of results, got ${describeValue(request)}`));
        return;
      }
      try {
        request.then(
          (results) => arrive(r, attempt, ARRIVED_OK, results),
          (e: unknown) => arrive(r, attempt, ARRIVED_ERROR, e),
        );
      } catch (e) {
        // A thenable whose then() throws.
        arrive(r, attempt, ARRIVED_ERROR, e);
      }
    };

    const complete = (r: PendingRecord<IN, OUT>, results: readonly OUT[]): void => {
      r.results = results;
      r.retryTimer?.cancel();
      r.retryTimer = undefined;
      incomplete--;
      queue.complete(r);
      // Completed records leave `deadlines` from its head now, not when the timer next fires:
      // otherwise it would hold every record of the last `timeoutMs`.
      if (deadlines.peek() === r) while (deadlines.peek()?.done === true) deadlines.shift();
    };

    /** The record failed for good: its error policy decides (under `fail` this throws and fails the task). */
    const fail = (r: PendingRecord<IN, OUT>, error: EddyError): void => {
      complete(r, NO_RESULTS);
      errors.onRecordError(error, r.value, r.timestamp);
    };

    const failed = (r: PendingRecord<IN, OUT>, cause: unknown): EddyError =>
      new EddyError(
        "ASYNC_IO_FAILED",
        `async I/O operator '${ctx.operatorName}' (subtask ${ctx.subtaskIndex}): the request for a record failed on attempt ${r.attempt}${retry === undefined ? "" : ` of ${retry.maxAttempts}`}: ${describeCause(cause)}`,
        { operator: ctx.operatorName, subtask: ctx.subtaskIndex, cause },
      );

    const scheduleRetry = (r: PendingRecord<IN, OUT>): void => {
      retries.inc();
      r.retryTimer = clock.schedule(clock.now() + retry!.backoffMs(r.attempt), () =>
        ctx.postMail(() => {
          r.retryTimer = undefined;
          if (!closed && !r.done) invoke(r);
        }),
      );
    };

    /** The retry strategy's predicate; one that throws fails the task (a bug, not a failed record). */
    const wants = <X>(predicate: (x: X) => boolean, x: X): boolean => {
      try {
        return predicate(x);
      } catch (e) {
        throw userFunctionError(ctx, e);
      }
    };

    const applyArrival = (r: PendingRecord<IN, OUT>): void => {
      if (r.done) return; // timed out after its outcome arrived
      const canRetry = retry !== undefined && r.attempt < retry.maxAttempts;
      if (r.arrival === ARRIVED_OK) {
        const results = resultsOf<OUT>(r.payload);
        if (results === undefined) return fail(r, failed(r, new TypeError(`asyncInvoke must resolve with an array or iterable of results, got ${describeValue(r.payload)}`)));
        if (canRetry && wants(retry.retryOnResult, results)) return scheduleRetry(r);
        return complete(r, results);
      }
      if (r.arrival === ARRIVED_ERROR && canRetry && wants(retry.retryOnError, r.payload)) return scheduleRetry(r);
      fail(r, failed(r, r.payload));
    };

    /** Mail: applies the outcomes that arrived, emits, admits what waited. */
    function applyArrivals(): void {
      arrivalMailPosted = false;
      if (closed) return;
      const batch = arrivals;
      arrivals = spare;
      spare = batch;
      try {
        for (let i = 0; i < batch.length; i++) {
          const r = batch[i]!;
          applyArrival(r);
          r.payload = undefined;
        }
      } finally {
        batch.length = 0;
      }
      afterProgress();
    }

    const timeOut = (r: PendingRecord<IN, OUT>): void => {
      timeouts.inc();
      r.retryTimer?.cancel();
      r.retryTimer = undefined;
      if (fn.timeout === undefined) {
        return fail(
          r,
          new EddyError(
            "ASYNC_IO_TIMEOUT",
            `async I/O operator '${ctx.operatorName}' (subtask ${ctx.subtaskIndex}): the request for a record did not complete within ${timeoutMs} ms (${r.attempt} attempt${r.attempt === 1 ? "" : "s"})`,
            { operator: ctx.operatorName, subtask: ctx.subtaskIndex },
          ),
        );
      }
      let results: readonly OUT[] | undefined;
      try {
        const returned: unknown = fn.timeout(r.value);
        results = resultsOf<OUT>(returned);
        if (results === undefined) throw new TypeError(`timeout(value) must return an array or iterable of results, got ${describeValue(returned)}`);
      } catch (e) {
        return fail(r, failed(r, e));
      }
      complete(r, results);
    };

    /** Mail: times out every record whose deadline passed, then re-arms for the oldest left. */
    function onDeadline(): void {
      deadlineTimer = undefined;
      if (closed) return;
      const now = clock.now();
      for (let head = deadlines.peek(); head !== undefined; head = deadlines.peek()) {
        if (!head.done) {
          if (head.deadlineMs > now) break;
          timeOut(head);
        }
        deadlines.shift();
      }
      armDeadline();
      afterProgress();
    }
    const postDeadline = (): void => ctx.postMail(onDeadline);
    const armDeadline = (): void => {
      while (deadlines.peek()?.done === true) deadlines.shift();
      const head = deadlines.peek();
      if (head !== undefined && deadlineTimer === undefined) deadlineTimer = clock.schedule(head.deadlineMs, postDeadline);
    };

    const issue = (r: PendingRecord<IN, OUT>): void => {
      queue.addRecord(r);
      incomplete++;
      if (busy === undefined) {
        busy = deferred();
        ctx.awaitWork(busy.promise, "background");
      }
      if (hasTimeout) {
        r.deadlineMs = clock.now() + timeoutMs;
        deadlines.push(r);
        if (deadlineTimer === undefined) armDeadline();
      }
      invoke(r);
    };

    const admit = (e: QueueElement<PendingRecord<IN, OUT>>): void => {
      if (e.isWatermark) queue.addWatermark(e.watermark);
      else issue(e);
    };

    /** After records completed: admits what waited, and settles the work that waited for it. */
    const afterProgress = (): void => {
      while (overflow.size > 0 && queue.size < capacity) admit(overflow.shift()!);
      if (overflow.size === 0 && room !== undefined) {
        room.resolve();
        room = undefined;
      }
      if (incomplete === 0 && busy !== undefined) {
        busy.resolve();
        busy = undefined;
      }
      if (drained !== undefined && queue.size === 0 && overflow.size === 0) {
        drained.resolve();
        drained = undefined;
      }
    };

    /** Adds an element now, or after the elements that wait (then the task stops taking input). */
    const add = (e: QueueElement<PendingRecord<IN, OUT>>): void => {
      if (overflow.size === 0 && queue.size < capacity) return admit(e);
      overflow.push(e);
      if (room === undefined) {
        room = deferred();
        ctx.awaitWork(room.promise, "blocking");
      }
    };

    const checkpointing = ctx.checkpointing;
    const restored = checkpointing?.registerOperatorState(ASYNC_WAIT_STATE, "split", () => {
      const stored: StoredElement[] = [];
      const store = (e: QueueElement<PendingRecord<IN, OUT>>): void => {
        // Copied: the value is encoded after the barrier, while the function may still hold it.
        if (e.isWatermark) stored.push({ v: STATE_VERSION, kind: "watermark", watermark: e.watermark });
        else stored.push({ v: STATE_VERSION, kind: "record", value: copyValue(e.value), timestamp: e.timestamp });
      };
      queue.forEach(store);
      for (let i = 0; i < overflow.size; i++) store(overflow.at(i)!);
      return stored;
    });

    const processElement = (value: IN, timestamp: number): void => add(new PendingRecord<IN, OUT>(value, timestamp));
    const processWatermark = (watermark: number): void => add({ isWatermark: true, watermark } satisfies QueuedWatermark);

    return {
      open() {
        callUser(ctx, () => fn.open?.(runtimeContextOf(ctx)));
        if (restored === undefined) return;
        // Requests in flight at the checkpoint are sent again, in the order they were queued.
        const elements = restored.map((e) => parseStoredElement(e, ctx.operatorName, ctx.subtaskIndex));
        for (const e of elements) {
          if (e.kind === "record") processElement(e.value as IN, e.timestamp);
          else processWatermark(e.watermark);
        }
      },
      processElement,
      processWatermark,
      // As Flink: the status goes on at once; the watermarks it holds back still follow their records.
      processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
      endInput() {
        if (queue.size === 0 && overflow.size === 0) return;
        drained = deferred();
        ctx.awaitWork(drained.promise, "blocking");
      },
      close() {
        if (closed) return;
        closed = true;
        deadlineTimer?.cancel();
        queue.forEach((e) => {
          if (!e.isWatermark) e.retryTimer?.cancel();
        });
        callUser(ctx, () => fn.close?.());
      },
    };
  };
}
