/**
 * Async I/O on a stream (Flink's AsyncDataStream): enrich records through a service whose client
 * returns promises, with up to `capacity` requests in flight per subtask. See docs/async-io.md.
 *
 * ```ts
 * const enriched = AsyncDataStream.orderedWait(orders, (o) => fetchCustomer(o.customerId).then((c) => [{ ...o, c }]), {
 *   timeoutMs: 1_000,
 *   capacity: 50,
 *   retry: { maxAttempts: 3, backoff: "exponential", delayMs: 50, maxDelayMs: 1_000 },
 * });
 * ```
 */
import type { AsyncFunctionLike, AsyncIoOptions } from "../runtime/async-function.ts";
import { asyncFunctionOf, asyncWaitSettings } from "../runtime/async-function.ts";
import { asyncWaitOperator } from "../runtime/operators/async-wait-operator.ts";
import type { DataStream } from "./data-stream.ts";

function asyncWait<IN, OUT>(ordered: boolean, stream: DataStream<IN>, fn: AsyncFunctionLike<IN, OUT>, options: AsyncIoOptions<OUT>): DataStream<OUT> {
  const what = ordered ? "AsyncDataStream.orderedWait" : "AsyncDataStream.unorderedWait";
  asyncFunctionOf(fn, what);
  const settings = asyncWaitSettings(options, ordered, what);
  return stream._transform<OUT>(ordered ? "AsyncWait (ordered)" : "AsyncWait (unordered)", asyncWaitOperator(fn, settings), false)._withErrorPolicy();
}

export const AsyncDataStream = {
  /**
   * Emits each record's results in the order the records came (a slow request holds back the
   * results of the records after it). Results carry the input record's timestamp; watermarks stay
   * behind the records before them. `.onError("skip" | "dead-letter")` on the returned stream
   * handles a record whose request failed (after its retries) or timed out without a handler.
   */
  orderedWait<IN, OUT>(stream: DataStream<IN>, fn: AsyncFunctionLike<IN, OUT>, options: AsyncIoOptions<OUT>): DataStream<OUT> {
    return asyncWait(true, stream, fn, options);
  },
  /**
   * Emits results as requests complete, reordering records only between two watermarks: a
   * watermark is emitted after every record before it, and no record after it overtakes it.
   * (Without event time — no watermarks — results are in completion order.)
   */
  unorderedWait<IN, OUT>(stream: DataStream<IN>, fn: AsyncFunctionLike<IN, OUT>, options: AsyncIoOptions<OUT>): DataStream<OUT> {
    return asyncWait(false, stream, fn, options);
  },
} as const;
