/** Runs a sink writer as the last operator of a chain. */
import { userFunctionError } from "../../core/errors.ts";
import { hasTimestamp } from "../../core/time.ts";
import type { Sink, SinkWriter } from "../../connector/sink.ts";
import type { OneInputOperator, OperatorContext } from "../operator.ts";

export function sinkOperator<T>(sink: Sink<T>) {
  return (ctx: OperatorContext): OneInputOperator<T> => {
    let writer: SinkWriter<T> | undefined;
    const call = <R>(f: () => R): R => {
      try {
        return f();
      } catch (e) {
        throw userFunctionError(ctx.operatorName, ctx.subtaskIndex, e);
      }
    };
    return {
      open() {
        writer = call(() =>
          sink.createWriter({
            subtaskIndex: ctx.subtaskIndex,
            parallelism: ctx.parallelism,
            operatorName: ctx.operatorName,
            job: ctx.job,
          }),
        );
      },
      processElement(value, timestamp) {
        try {
          writer!.write(value, hasTimestamp(timestamp) ? timestamp : undefined);
        } catch (e) {
          throw userFunctionError(ctx.operatorName, ctx.subtaskIndex, e);
        }
      },
      processWatermark() {},
      processWatermarkStatus() {},
      endInput() {
        call(() => writer?.flush?.(true));
      },
      close() {
        const w = writer;
        writer = undefined;
        if (w !== undefined) call(() => w.close?.());
      },
    };
  };
}
