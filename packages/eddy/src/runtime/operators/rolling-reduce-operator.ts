/**
 * Rolling aggregation on a keyed stream (`reduce`, `sum`, `min`, `max`, `minBy`, `maxBy`): for
 * each record, combine it with the key's accumulator, store the result and emit it.
 *
 * Ownership: an emitted record belongs to downstream, which may mutate it. So state keeps its own
 * copy of each result, and the accumulator handed to the reduce function is that private copy
 * (the function may mutate and return it). One copy per record, none for primitive values.
 */
import { EddyError, userFunctionError } from "../../core/errors.ts";
import { copyValue } from "../../state/copy-value.ts";
import { ValueStateDescriptor } from "../../state/descriptors.ts";
import type { ReduceFunction } from "../functions.ts";
import type { OneInputOperator, OperatorContext, Output } from "../operator.ts";
import { KeyedStateAndTimers, requireKeySelector } from "./keyed-state-and-timers.ts";

export function rollingReduceOperator<T>(fn: ReduceFunction<T>) {
  return (ctx: OperatorContext, output: Output<T>): OneInputOperator<T> => {
    const keySelector = requireKeySelector(ctx, 0);
    const keyed = new KeyedStateAndTimers(ctx, () => {});
    // The operator owns the state and reads it by record key: no current key to set per record.
    const state = keyed.backend.getVoidValueCursor(new ValueStateDescriptor<T>("rolling-reduce", { copy: "none" }));
    /** One record; processElement and the batch loop share it. */
    const step = (value: T, timestamp: number, keyGroup: number | undefined): void => {
      // hot path
      const key = keyed.keyOf(keySelector, value);
      const accumulator = state.seek(key, keyGroup ?? keyed.keyGroupOf(key));
      let result: T;
      let stored: T;
      try {
        result = accumulator === undefined ? value : fn(accumulator, value);
        // e.g. VALUE_NOT_COPYABLE for class instances: named after the operator too.
        stored = copyValue(result);
      } catch (e) {
        throw userFunctionError(ctx, e);
      }
      state.set(stored);
      output.collect(result, timestamp);
    };
    return {
      processElement: step,
      processBatch(values, timestamps, keyGroups) {
        // hot path: the loop is its own compilation unit, so V8 inlines the whole step into it.
        const n = values.length;
        if (keyGroups === undefined) for (let i = 0; i < n; i++) step(values[i]!, timestamps[i]!, undefined);
        else for (let i = 0; i < n; i++) step(values[i]!, timestamps[i]!, keyGroups[i]!);
      },
      processWatermark: (watermark) => output.emitWatermark(watermark),
      processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
      close: () => keyed.close(),
    };
  };
}

export type AggregationKind = "sum" | "min" | "max" | "minBy" | "maxBy";

/**
 * The reduce function of a field aggregation, with Flink's semantics: `sum`/`min`/`max` keep the
 * first record of the key and update only the field; `minBy`/`maxBy` keep the whole record that
 * holds the extreme value (the first one on ties). Without a field, records must be numbers.
 */
export function fieldAggregation<T>(kind: AggregationKind, field: string | undefined, operatorName: string): ReduceFunction<T> {
  const read = (record: unknown): number => {
    const v = field === undefined ? record : (record as Record<string, unknown> | null)?.[field];
    if (typeof v !== "number") {
      const where = field === undefined ? "the record" : `field '${field}'`;
      throw new EddyError("NOT_A_NUMBER", `${kind} in '${operatorName}': ${where} is ${describe(v)}, expected a number`);
    }
    return v;
  };
  const write = (record: T, v: number): T => {
    if (field === undefined) return v as T;
    (record as Record<string, unknown>)[field] = v;
    return record;
  };
  switch (kind) {
    case "sum":
      return (acc, value) => write(acc, read(acc) + read(value));
    case "min":
      return (acc, value) => write(acc, Math.min(read(acc), read(value)));
    case "max":
      return (acc, value) => write(acc, Math.max(read(acc), read(value)));
    case "minBy":
      return (acc, value) => (read(value) < read(acc) ? value : acc);
    case "maxBy":
      return (acc, value) => (read(value) > read(acc) ? value : acc);
  }
}

function describe(v: unknown): string {
  if (v === undefined) return "missing";
  if (v === null) return "null";
  return `a ${typeof v} (${JSON.stringify(v)?.slice(0, 40) ?? String(v)})`;
}
