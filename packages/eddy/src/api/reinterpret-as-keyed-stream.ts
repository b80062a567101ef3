/**
 * Flink's `DataStreamUtils.reinterpretAsKeyedStream`: a stream that is already partitioned by a
 * key, used as a keyed stream without another shuffle.
 */
import type { Key } from "../core/key.ts";
import type { KeySelector } from "../runtime/functions.ts";
import { requireFunction, type DataStream, type KeyedStream } from "./data-stream.ts";

/**
 * Treats `stream` as keyed by `keySelector` without repartitioning it: each record stays in its
 * subtask (a forward edge, so the keyed operator must have the stream's parallelism, else
 * FORWARD_PARALLELISM_MISMATCH). Only correct when every record already is in the subtask that
 * `keyBy(keySelector)` would send it to, with the keyed operator's max parallelism — typically a
 * stream derived by record-wise functions (map, filter, flatMap keeping the key) from a keyed
 * stream of the same parallelism and max parallelism.
 *
 * Checked at run time, always: a record whose key belongs to another subtask's key groups fails
 * the job with KEY_NOT_IN_SUBTASK, naming the key, its key group and both subtasks, instead of
 * reaching state it does not own (which would be lost or duplicated by a rescale). The check is
 * one comparison per record on a path that hashes the key anyway.
 */
export function reinterpretAsKeyedStream<T, K extends Key>(stream: DataStream<T>, keySelector: KeySelector<T, K>): KeyedStream<T, K> {
  requireFunction(keySelector, "reinterpretAsKeyedStream");
  return stream._reinterpretAsKeyed(keySelector);
}
