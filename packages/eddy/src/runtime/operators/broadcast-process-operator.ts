/**
 * The operators of the broadcast state pattern (Flink's CoBroadcastWithKeyedOperator and
 * CoBroadcastWithNonKeyedOperator): input 1 is the keyed or non-keyed stream, input 2 the
 * broadcast stream (every subtask receives every record of it). Input 2 runs
 * `processBroadcastElement` with writable broadcast state (and, keyed, `applyToKeyedState`);
 * input 1 runs `processElement` with the same state read-only (and, keyed, keyed state and timers
 * of the record's key). Timers fire `onTimer` with broadcast state read-only. Watermarks are the
 * minimum over both inputs, as for every two-input operator.
 */
import { userFunctionError } from "../../core/errors.ts";
import { EddyError } from "../../core/errors.ts";
import type { Key } from "../../core/key.ts";
import type { OutputTag } from "../../core/output-tag.ts";
import { hasTimestamp, MIN_WATERMARK, NO_TIMESTAMP } from "../../core/time.ts";
import type { MapStateDescriptor, StateDescriptorBase } from "../../state/descriptors.ts";
import { stateFor } from "../../state/keyed-state-backend.ts";
import { BroadcastStates, type BroadcastState, type ReadOnlyBroadcastState } from "../broadcast-state.ts";
import type {
  BroadcastProcessFunction,
  KeyedBroadcastContext,
  KeyedBroadcastOnTimerContext,
  KeyedBroadcastProcessFunction,
  TimerService,
} from "../functions.ts";
import type { OperatorContext, Output, TwoInputOperator } from "../operator.ts";
import { perSubtaskInstance, type FunctionFactory } from "./function-instance.ts";

/** The methods every broadcast process function has. */
export const BROADCAST_METHODS = ["processElement", "processBroadcastElement"] as const;
import { KeyedContext, keyedParts } from "./keyed-process-operator.ts";
import { KeyedStateAndTimers, nonKeyedTimerService, requireKeySelector } from "./keyed-state-and-timers.ts";
import { callUser, NonKeyedContext, runtimeContextOf } from "./process-operator.ts";
import { TimestampedCollector } from "./timestamped-collector.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the descriptors of one operator have any types
export type AnyMapStateDescriptor = MapStateDescriptor<any, any>;

/** The keyed side's context (processElement, onTimer): keyed state, timers, broadcast state read-only. */
class KeyedReadOnlyContext<K> extends KeyedContext<K> implements KeyedBroadcastOnTimerContext<K> {
  readonly #broadcast: BroadcastStates;

  constructor(keyed: KeyedStateAndTimers, output: Output<unknown>, broadcast: BroadcastStates) {
    super(keyed, output);
    this.#broadcast = broadcast;
  }

  getBroadcastState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): ReadOnlyBroadcastState<UK, UV> {
    return this.#broadcast.readOnly(descriptor);
  }
}

/** The non-keyed side's context (processElement): broadcast state read-only. */
class NonKeyedReadOnlyContext extends NonKeyedContext {
  readonly #broadcast: BroadcastStates;

  constructor(ctx: OperatorContext, output: Output<unknown>, broadcast: BroadcastStates) {
    super(ctx, output);
    this.#broadcast = broadcast;
  }

  getBroadcastState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): ReadOnlyBroadcastState<UK, UV> {
    return this.#broadcast.readOnly(descriptor);
  }
}

/**
 * The broadcast side's context (processBroadcastElement): writable broadcast state; with a keyed
 * first input, `applyToKeyedState`. No current key, so no timers.
 */
class BroadcastSideContext<K> implements KeyedBroadcastContext<K> {
  readonly #output: Output<unknown>;
  readonly #broadcast: BroadcastStates;
  readonly #keyed: KeyedStateAndTimers | undefined;
  readonly #timerService: TimerService;
  currentTimestamp = NO_TIMESTAMP;
  /** The non-keyed operator's event time (a keyed one reads its timer service's). */
  currentWatermark = MIN_WATERMARK;

  constructor(ctx: OperatorContext, output: Output<unknown>, broadcast: BroadcastStates, keyed: KeyedStateAndTimers | undefined) {
    this.#output = output;
    this.#broadcast = broadcast;
    this.#keyed = keyed;
    this.#timerService = nonKeyedTimerService(
      ctx,
      () => keyed?.currentWatermark ?? this.currentWatermark,
      `processBroadcastElement has no current key, so it cannot set timers (operator '${ctx.operatorName}'); set them in processElement`,
    );
  }

  timestamp(): number | undefined {
    return hasTimestamp(this.currentTimestamp) ? this.currentTimestamp : undefined;
  }
  timerService(): TimerService {
    return this.#timerService;
  }
  output<S>(tag: OutputTag<S>, value: S): void {
    this.#output.collectSide(tag, value, this.currentTimestamp);
  }
  getBroadcastState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): BroadcastState<UK, UV> {
    return this.#broadcast.writable(descriptor);
  }

  applyToKeyedState(descriptor: StateDescriptorBase, fn: (key: K, state: never) => void): void {
    const keyed = this.#keyed;
    if (keyed === undefined) throw new EddyError("NOT_KEYED", "applyToKeyedState needs a keyed stream connected to the broadcast stream");
    if (typeof fn !== "function") throw new TypeError("applyToKeyedState needs a function (key, state) => void");
    const backend = keyed.backend;
    const state = stateFor(backend, descriptor);
    for (const { key, keyGroup } of backend.keysOf(descriptor.name)) {
      backend.setCurrentKey(key, keyGroup);
      fn(key as K, state as never);
    }
  }
}

/** processElement2 of both operators: the broadcast record, with writable broadcast state. */
function broadcastInput<K, IN2, OUT>(
  ctx: OperatorContext,
  fn: { processBroadcastElement(value: IN2, ctx: KeyedBroadcastContext<K>, out: TimestampedCollector<OUT>): void },
  context: BroadcastSideContext<K>,
  collector: TimestampedCollector<OUT>,
): (value: IN2, timestamp: number) => void {
  return (value, timestamp) => {
    context.currentTimestamp = timestamp;
    collector.timestamp = timestamp;
    try {
      fn.processBroadcastElement(value, context, collector);
    } catch (e) {
      throw userFunctionError(ctx, e);
    }
  };
}

export function keyedBroadcastProcessOperator<K extends Key, IN1, IN2, OUT>(
  userFn: KeyedBroadcastProcessFunction<K, IN1, IN2, OUT> | FunctionFactory<KeyedBroadcastProcessFunction<K, IN1, IN2, OUT>>,
  descriptors: readonly AnyMapStateDescriptor[],
) {
  return (ctx: OperatorContext, output: Output<OUT>): TwoInputOperator<IN1, IN2> => {
    const fn = perSubtaskInstance(userFn, ctx, BROADCAST_METHODS);
    const keySelector = requireKeySelector(ctx, 0);
    const broadcast = new BroadcastStates(ctx, descriptors);
    const { keyed, context, collector, runtimeContext } = keyedParts<K, OUT, KeyedReadOnlyContext<K>>(
      ctx,
      output,
      fn,
      (k, o) => new KeyedReadOnlyContext<K>(k, o, broadcast),
    );
    const broadcastContext = new BroadcastSideContext<K>(ctx, output as Output<unknown>, broadcast, keyed);
    return {
      open: () => callUser(ctx, () => fn.open?.(runtimeContext)),
      processElement1(value, timestamp, keyGroup) {
        keyed.setKeyFromRecord(keySelector, value, keyGroup);
        context.currentTimestamp = timestamp;
        context.domain = "event";
        collector.timestamp = timestamp;
        try {
          fn.processElement(value, context, collector);
        } catch (e) {
          throw userFunctionError(ctx, e);
        }
      },
      processElement2: broadcastInput(ctx, fn, broadcastContext, collector),
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

export function broadcastProcessOperator<IN1, IN2, OUT>(
  userFn: BroadcastProcessFunction<IN1, IN2, OUT> | FunctionFactory<BroadcastProcessFunction<IN1, IN2, OUT>>,
  descriptors: readonly AnyMapStateDescriptor[],
) {
  return (ctx: OperatorContext, output: Output<OUT>): TwoInputOperator<IN1, IN2> => {
    const fn = perSubtaskInstance(userFn, ctx, BROADCAST_METHODS);
    const broadcast = new BroadcastStates(ctx, descriptors);
    const context = new NonKeyedReadOnlyContext(ctx, output as Output<unknown>, broadcast);
    const broadcastContext = new BroadcastSideContext<never>(ctx, output as Output<unknown>, broadcast, undefined);
    const collector = new TimestampedCollector(output);
    return {
      open: () => callUser(ctx, () => fn.open?.(runtimeContextOf(ctx))),
      processElement1(value, timestamp) {
        context.currentTimestamp = timestamp;
        collector.timestamp = timestamp;
        try {
          fn.processElement(value, context, collector);
        } catch (e) {
          throw userFunctionError(ctx, e);
        }
      },
      processElement2: broadcastInput(ctx, fn, broadcastContext, collector),
      processWatermark(watermark) {
        context.currentWatermark = watermark;
        broadcastContext.currentWatermark = watermark;
        output.emitWatermark(watermark);
      },
      processWatermarkStatus: (idle) => output.emitWatermarkStatus(idle),
      close: () => callUser(ctx, () => fn.close?.()),
    };
  };
}
