/**
 * map, filter, flatMap: one user call per record, no state, watermarks pass through. A record the
 * function throws on goes to the operator's error policy (runtime/record-error-policy.ts), called
 * only in the `catch`, so the per-record path is the same under every policy.
 */
import type { FilterFunction, FlatMapFunction, MapFunction } from "../functions.ts";
import type { OneInputOperator, OperatorContext, Output } from "../operator.ts";
import { recordErrorPolicy } from "../record-error-policy.ts";
import { TimestampedCollector } from "./timestamped-collector.ts";

export function mapOperator<IN, OUT>(fn: MapFunction<IN, OUT>) {
  return (ctx: OperatorContext, output: Output<OUT>): OneInputOperator<IN> => {
    const errors = recordErrorPolicy(ctx, output);
    return {
      processElement(value, timestamp) {
        let result: OUT;
        try {
          result = fn(value);
        } catch (e) {
          errors.onRecordError(e, value, timestamp);
          return;
        }
        output.collect(result, timestamp);
      },
      processWatermark: (watermark) => output.emitWatermark(watermark),
      processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
    };
  };
}

export function filterOperator<T>(fn: FilterFunction<T>) {
  return (ctx: OperatorContext, output: Output<T>): OneInputOperator<T> => {
    const errors = recordErrorPolicy(ctx, output);
    return {
      processElement(value, timestamp) {
        let keep: boolean;
        try {
          keep = fn(value);
        } catch (e) {
          errors.onRecordError(e, value, timestamp);
          return;
        }
        if (keep) output.collect(value, timestamp);
      },
      processWatermark: (watermark) => output.emitWatermark(watermark),
      processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
    };
  };
}

export function flatMapOperator<IN, OUT>(fn: FlatMapFunction<IN, OUT>) {
  return (ctx: OperatorContext, output: Output<OUT>): OneInputOperator<IN> => {
    const collector = new TimestampedCollector(output);
    const errors = recordErrorPolicy(ctx, output);
    return {
      processElement(value, timestamp) {
        collector.timestamp = timestamp;
        try {
          fn(value, collector);
        } catch (e) {
          // What the function collected before it threw has gone downstream already.
          errors.onRecordError(e, value, timestamp);
        }
      },
      processWatermark: (watermark) => output.emitWatermark(watermark),
      processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
    };
  };
}
