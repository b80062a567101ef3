/**
 * KeyedProcessFunction and KeyedCoProcessFunction: keyed state and timers of the current key.
 * A watermark first fires every event-time timer it passes (in timestamp order), then is
 * forwarded. Output of an event-time timer carries the timer's timestamp; output of a
 * processing-time timer carries none.
 */
import { userFunctionError } from "../../core/errors.ts";
import type { Key } from "../../core/key.ts";
import { requireOutputTag, type OutputTag } from "../../core/output-tag.ts";
import { hasTimestamp, NO_TIMESTAMP } from "../../core/time.ts";
import type {
  Collector,
  KeyedCoProcessFunction,
  KeyedProcessFunction,
  KeyedRuntimeContext,
  OnTimerContext,
  TimerService,
} from "../functions.ts";
import type { OneInputOperator, OperatorContext, Output, TwoInputOperator } from "../operator.ts";
import { KeyedStateAndTimers, requireKeySelector, type TimerDomain } from "./keyed-state-and-timers.ts";
import { callUser, runtimeContextOf } from "./process-operator.ts";
import { perSubtaskInstance, type FunctionFactory } from "./function-instance.ts";
import { asyncResultError, rejectAsyncMethods } from "./synchronous-user-call.ts";
import { TimestampedCollector } from "./timestamped-collector.ts";
import { recordErrorPolicy } from "../record-error-policy.ts";

/** The context of one keyed operator, reused for every record and timer. */
export class KeyedContext<K> implements OnTimerContext<K> {
  readonly #keyed: KeyedStateAndTimers;
  readonly #output: Output<unknown>;
  currentTimestamp = NO_TIMESTAMP;
  domain: TimerDomain = "event";

  constructor(keyed: KeyedStateAndTimers, output: Output<unknown>) {
    this.#keyed = keyed;
    this.#output = output;
  }

  getCurrentKey(): K {
    return this.#keyed.backend.getCurrentKey() as K;
  }
  timestamp(): number | undefined {
    return hasTimestamp(this.currentTimestamp) ? this.currentTimestamp : undefined;
  }
  timerService(): TimerService {
    return this.#keyed.timerService;
  }
  output<S>(tag: OutputTag<S>, value: S): void {
    requireOutputTag(tag, "ctx.output(tag, value)", "user");
    this.#output.collectSide(tag, value, this.currentTimestamp);
  }
  timeDomain(): "event-time" | "processing-time" {
    return this.domain === "event" ? "event-time" : "processing-time";
  }
  getState: KeyedStateAndTimers["stateStore"]["getState"] = (d) => this.#keyed.stateStore.getState(d);
  getListState: KeyedStateAndTimers["stateStore"]["getListState"] = (d) => this.#keyed.stateStore.getListState(d);
  getMapState: KeyedStateAndTimers["stateStore"]["getMapState"] = (d) => this.#keyed.stateStore.getMapState(d);
  getReducingState: KeyedStateAndTimers["stateStore"]["getReducingState"] = (d) => this.#keyed.stateStore.getReducingState(d);
  getAggregatingState: KeyedStateAndTimers["stateStore"]["getAggregatingState"] = (d) =>
    this.#keyed.stateStore.getAggregatingState(d);
}

interface TimerHook<C, OUT> {
  onTimer?(timestamp: number, ctx: C, out: Collector<OUT>): void;
}

/**
 * Builds the keyed state and timers, context and collector shared by the keyed operators (one- and
 * two-input, and the keyed broadcast operator, whose context `makeContext` extends KeyedContext).
 */
export function keyedParts<K, OUT, C extends KeyedContext<K>>(
  ctx: OperatorContext,
  output: Output<OUT>,
  fn: TimerHook<C, OUT>,
  makeContext: (keyed: KeyedStateAndTimers, output: Output<unknown>) => C,
) {
  const collector = new TimestampedCollector(output);
  let context: C | undefined;
  const keyed = new KeyedStateAndTimers(ctx, (domain, timestamp) => {
    if (fn.onTimer === undefined) return;
    const c = context!;
    c.domain = domain;
    c.currentTimestamp = domain === "event" ? timestamp : NO_TIMESTAMP;
    collector.timestamp = c.currentTimestamp;
    try {
      fn.onTimer(timestamp, c, collector);
    } catch (e) {
      throw userFunctionError(ctx, e);
    }
  });
  context = makeContext(keyed, output as Output<unknown>);
  const runtimeContext: KeyedRuntimeContext = { ...runtimeContextOf(ctx), ...keyed.stateStore };
  return { keyed, context, collector, runtimeContext };
}

export function keyedProcessOperator<K extends Key, IN, OUT>(userFn: KeyedProcessFunction<K, IN, OUT> | FunctionFactory<KeyedProcessFunction<K, IN, OUT>>) {
  rejectAsyncMethods(userFn, "process", ["processElement", "onTimer"]);
  return (ctx: OperatorContext, output: Output<OUT>): OneInputOperator<IN> => {
    const fn = perSubtaskInstance(userFn, ctx, ["processElement"]);
    const keySelector = requireKeySelector(ctx, 0);
    const { keyed, context, collector, runtimeContext } = keyedParts<K, OUT, KeyedContext<K>>(ctx, output, fn, (k, o) => new KeyedContext<K>(k, o));
    const errors = recordErrorPolicy(ctx, output as Output<unknown>);
    return {
      open: () => callUser(ctx, () => fn.open?.(runtimeContext)),
      processElement(value, timestamp, keyGroup) {
        // The key selector is the operator's too: a record it throws on (or returns an invalid key
        // for) goes to the policy. The partitioner upstream hands such records on for that
        // (partitioner.ts, keyGroupSelector); a key group it could not compute arrives as -1 and is
        // never used, since the selector throws again here.
        try {
          keyed.setKeyFromRecord(keySelector, value, keyGroup);
        } catch (e) {
          errors.onRecordError(e, value, timestamp);
          return;
        }
        context.currentTimestamp = timestamp;
        context.domain = "event";
        collector.timestamp = timestamp;
        let result: unknown;
        try {
          result = fn.processElement(value, context, collector);
        } catch (e) {
          // What the function emitted or wrote to state before it threw stays.
          errors.onRecordError(e, value, timestamp);
          return;
        }
        if (result !== undefined && result instanceof Promise) throw asyncResultError(ctx, "processElement", result);
      },
      processWatermark(watermark) {
        keyed.timers.advanceWatermark(watermark);
        output.emitWatermark(watermark);
      },
      processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
      endInput: () => keyed.endInput(1),
      close() {
        keyed.close();
        callUser(ctx, () => fn.close?.());
      },
    };
  };
}

export function keyedCoProcessOperator<K extends Key, IN1, IN2, OUT>(
  userFn: KeyedCoProcessFunction<K, IN1, IN2, OUT> | FunctionFactory<KeyedCoProcessFunction<K, IN1, IN2, OUT>>,
) {
  return (ctx: OperatorContext, output: Output<OUT>): TwoInputOperator<IN1, IN2> => {
    const fn = perSubtaskInstance(userFn, ctx, ["processElement1", "processElement2"]);
    const keySelector1 = requireKeySelector(ctx, 0);
    const keySelector2 = requireKeySelector(ctx, 1);
    const { keyed, context, collector, runtimeContext } = keyedParts<K, OUT, KeyedContext<K>>(ctx, output, fn, (k, o) => new KeyedContext<K>(k, o));
    const before = (timestamp: number): void => {
      context.currentTimestamp = timestamp;
      context.domain = "event";
      collector.timestamp = timestamp;
    };
    return {
      open: () => callUser(ctx, () => fn.open?.(runtimeContext)),
      processElement1(value, timestamp, keyGroup) {
        keyed.setKeyFromRecord(keySelector1, value, keyGroup);
        before(timestamp);
        try {
          fn.processElement1(value, context, collector);
        } catch (e) {
          throw userFunctionError(ctx, e);
        }
      },
      processElement2(value, timestamp, keyGroup) {
        keyed.setKeyFromRecord(keySelector2, value, keyGroup);
        before(timestamp);
        try {
          fn.processElement2(value, context, collector);
        } catch (e) {
          throw userFunctionError(ctx, e);
        }
      },
      processWatermark(watermark) {
        keyed.timers.advanceWatermark(watermark);
        output.emitWatermark(watermark);
      },
      processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
      endInput: () => keyed.endInput(2),
      close() {
        keyed.close();
        callUser(ctx, () => fn.close?.());
      },
    };
  };
}
