/** Non-keyed ProcessFunction and CoProcessFunction: per-record context, side outputs, no timers. */
import { userFunctionError } from "../../core/errors.ts";
import { requireOutputTag, type OutputTag } from "../../core/output-tag.ts";
import { hasTimestamp, MIN_WATERMARK } from "../../core/time.ts";
import type { CoProcessFunction, ProcessContext, ProcessFunction, RuntimeContext } from "../functions.ts";
import type { OneInputOperator, OperatorContext, Output, TwoInputOperator } from "../operator.ts";
import { nonKeyedTimerService } from "./keyed-state-and-timers.ts";
import { perSubtaskInstance, type FunctionFactory } from "./function-instance.ts";
import { asyncResultError, failCollectAfterReturn, rejectAsyncMethods } from "./synchronous-user-call.ts";
import { TimestampedCollector } from "./timestamped-collector.ts";
import { recordErrorPolicy } from "../record-error-policy.ts";
import { operatorStateStore, type OperatorListState } from "../operator-state.ts";

/** The context object of one operator, reused for every record. */
export class NonKeyedContext implements ProcessContext {
  readonly #output: Output<unknown>;
  readonly #timerService;
  currentTimestamp = Number.NaN;
  currentWatermark = MIN_WATERMARK;

  constructor(ctx: OperatorContext, output: Output<unknown>) {
    this.#output = output;
    this.#timerService = nonKeyedTimerService(ctx, () => this.currentWatermark);
  }

  timestamp(): number | undefined {
    return hasTimestamp(this.currentTimestamp) ? this.currentTimestamp : undefined;
  }

  timerService() {
    return this.#timerService;
  }

  output<S>(tag: OutputTag<S>, value: S): void {
    requireOutputTag(tag, "ctx.output(tag, value)", "user");
    this.#output.collectSide(tag, value, this.currentTimestamp);
  }
}

export function runtimeContextOf(ctx: OperatorContext): RuntimeContext {
  const store = operatorStateStore(ctx);
  return {
    operatorName: ctx.operatorName,
    subtaskIndex: ctx.subtaskIndex,
    parallelism: ctx.parallelism,
    metrics: ctx.metrics,
    getOperatorListState: <T>(name: string) => store(name, "split") as OperatorListState<T>,
    getUnionListState: <T>(name: string) => store(name, "union") as OperatorListState<T>,
  };
}

/** Calls a user lifecycle hook, wrapping failures with the operator name. */
export function callUser(ctx: OperatorContext, hook: () => void): void {
  try {
    hook();
  } catch (e) {
    throw userFunctionError(ctx, e);
  }
}

export function processOperator<IN, OUT>(userFn: ProcessFunction<IN, OUT> | FunctionFactory<ProcessFunction<IN, OUT>>) {
  rejectAsyncMethods(userFn, "process", ["processElement"]);
  return (ctx: OperatorContext, output: Output<OUT>): OneInputOperator<IN> => {
    const fn = perSubtaskInstance(userFn, ctx, ["processElement"]);
    const context = new NonKeyedContext(ctx, output as Output<unknown>);
    const collector = new TimestampedCollector(output, () => failCollectAfterReturn(ctx, "processElement"));
    const errors = recordErrorPolicy(ctx, output as Output<unknown>);
    return {
      open: () => callUser(ctx, () => fn.open?.(runtimeContextOf(ctx))),
      processElement(value, timestamp) {
        context.currentTimestamp = timestamp;
        collector.timestamp = timestamp;
        collector.open = true;
        let result: unknown;
        try {
          result = fn.processElement(value, context, collector);
        } catch (e) {
          // What the function emitted before it threw (main or side output) has gone downstream.
          collector.open = false;
          errors.onRecordError(e, value, timestamp);
          return;
        }
        collector.open = false;
        if (result !== undefined && result instanceof Promise) throw asyncResultError(ctx, "processElement", result);
      },
      processWatermark(watermark) {
        context.currentWatermark = watermark;
        output.emitWatermark(watermark);
      },
      processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
      close: () => callUser(ctx, () => fn.close?.()),
    };
  };
}

export function coProcessOperator<IN1, IN2, OUT>(userFn: CoProcessFunction<IN1, IN2, OUT> | FunctionFactory<CoProcessFunction<IN1, IN2, OUT>>) {
  return (ctx: OperatorContext, output: Output<OUT>): TwoInputOperator<IN1, IN2> => {
    const fn = perSubtaskInstance(userFn, ctx, ["processElement1", "processElement2"]);
    const context = new NonKeyedContext(ctx, output as Output<unknown>);
    const collector = new TimestampedCollector(output);
    return {
      open: () => callUser(ctx, () => fn.open?.(runtimeContextOf(ctx))),
      processElement1(value, timestamp) {
        context.currentTimestamp = timestamp;
        collector.timestamp = timestamp;
        try {
          fn.processElement1(value, context, collector);
        } catch (e) {
          throw userFunctionError(ctx, e);
        }
      },
      processElement2(value, timestamp) {
        context.currentTimestamp = timestamp;
        collector.timestamp = timestamp;
        try {
          fn.processElement2(value, context, collector);
        } catch (e) {
          throw userFunctionError(ctx, e);
        }
      },
      processWatermark(watermark) {
        context.currentWatermark = watermark;
        output.emitWatermark(watermark);
      },
      processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
      close: () => callUser(ctx, () => fn.close?.()),
    };
  };
}
