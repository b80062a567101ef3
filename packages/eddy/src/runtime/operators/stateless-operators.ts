/** map, filter, flatMap: one user call per record, no state, watermarks pass through. */
import { userFunctionError } from "../../core/errors.ts";
import type { FilterFunction, FlatMapFunction, MapFunction } from "../functions.ts";
import type { OneInputOperator, OperatorContext, Output } from "../operator.ts";
import { TimestampedCollector } from "./timestamped-collector.ts";

export function mapOperator<IN, OUT>(fn: MapFunction<IN, OUT>) {
  return (ctx: OperatorContext, output: Output<OUT>): OneInputOperator<IN> => ({
    processElement(value, timestamp) {
      let result: OUT;
      try {
        result = fn(value);
      } catch (e) {
        throw userFunctionError(ctx.operatorName, ctx.subtaskIndex, e);
      }
      output.collect(result, timestamp);
    },
    processWatermark: (watermark) => output.emitWatermark(watermark),
    processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
  });
}

export function filterOperator<T>(fn: FilterFunction<T>) {
  return (ctx: OperatorContext, output: Output<T>): OneInputOperator<T> => ({
    processElement(value, timestamp) {
      let keep: boolean;
      try {
        keep = fn(value);
      } catch (e) {
        throw userFunctionError(ctx.operatorName, ctx.subtaskIndex, e);
      }
      if (keep) output.collect(value, timestamp);
    },
    processWatermark: (watermark) => output.emitWatermark(watermark),
    processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
  });
}

export function flatMapOperator<IN, OUT>(fn: FlatMapFunction<IN, OUT>) {
  return (ctx: OperatorContext, output: Output<OUT>): OneInputOperator<IN> => {
    const collector = new TimestampedCollector(output);
    return {
      processElement(value, timestamp) {
        collector.timestamp = timestamp;
        try {
          fn(value, collector);
        } catch (e) {
          throw userFunctionError(ctx.operatorName, ctx.subtaskIndex, e);
        }
      },
      processWatermark: (watermark) => output.emitWatermark(watermark),
      processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
    };
  };
}
