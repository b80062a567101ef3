/**
 * map, filter, flatMap: one user call per record, no state, watermarks pass through. A record the
 * function throws on goes to the operator's error policy (runtime/record-error-policy.ts), called
 * only in the `catch`, so the per-record path is the same under every policy.
 */
import type { FilterFunction, FlatMapFunction, MapFunction } from "../functions.ts";
import type { OneInputOperator, OperatorContext, Output } from "../operator.ts";
import { recordErrorPolicy } from "../record-error-policy.ts";
import { asyncResultError, failCollectAfterReturn, rejectAsyncFunction } from "./synchronous-user-call.ts";
import { TimestampedCollector } from "./timestamped-collector.ts";

export function mapOperator<IN, OUT>(fn: MapFunction<IN, OUT>) {
  rejectAsyncFunction(fn, "map");
  return (ctx: OperatorContext, output: Output<OUT>): OneInputOperator<IN> => {
    const errors = recordErrorPolicy(ctx, output);
    return {
      // hot path
      processElement(value, timestamp) {
        let result: OUT;
        try {
          result = fn(value);
        } catch (e) {
          errors.onRecordError(e, value, timestamp);
          return;
        }
        if (result instanceof Promise) throw asyncResultError(ctx, "map", result);
        output.collect(result, timestamp);
      },
      processWatermark: (watermark) => output.emitWatermark(watermark),
      processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
    };
  };
}

export function filterOperator<T>(fn: FilterFunction<T>) {
  rejectAsyncFunction(fn, "filter");
  return (ctx: OperatorContext, output: Output<T>): OneInputOperator<T> => {
    const errors = recordErrorPolicy(ctx, output);
    return {
      // hot path
      processElement(value, timestamp) {
        let keep: boolean;
        try {
          keep = fn(value);
        } catch (e) {
          errors.onRecordError(e, value, timestamp);
          return;
        }
        if (keep === true) output.collect(value, timestamp);
        else if (keep) {
          // Truthy but not true: a promise (always truthy) would keep every record.
          if ((keep as unknown) instanceof Promise) throw asyncResultError(ctx, "filter", keep as unknown as Promise<unknown>);
          output.collect(value, timestamp);
        }
      },
      processWatermark: (watermark) => output.emitWatermark(watermark),
      processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
    };
  };
}

export function flatMapOperator<IN, OUT>(fn: FlatMapFunction<IN, OUT>) {
  rejectAsyncFunction(fn, "flatMap");
  return (ctx: OperatorContext, output: Output<OUT>): OneInputOperator<IN> => {
    const collector = new TimestampedCollector(output, () => failCollectAfterReturn(ctx, "flatMap"));
    const errors = recordErrorPolicy(ctx, output);
    return {
      processElement(value, timestamp) {
        collector.timestamp = timestamp;
        collector.open = true;
        let result: unknown;
        try {
          result = fn(value, collector);
        } catch (e) {
          // What the function collected before it threw has gone downstream already.
          collector.open = false;
          errors.onRecordError(e, value, timestamp);
          return;
        }
        collector.open = false;
        if (result !== undefined && result instanceof Promise) throw asyncResultError(ctx, "flatMap", result);
      },
      processWatermark: (watermark) => output.emitWatermark(watermark),
      processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
    };
  };
}
