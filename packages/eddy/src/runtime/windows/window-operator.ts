/**
 * The window operator (Flink's WindowOperator): assigns each element of a keyed stream to windows,
 * keeps each window's contents in keyed state under the window's namespace (one accumulator per
 * window for reduce/aggregate, the elements for process), asks the trigger what to do on every
 * element and timer, and evaluates the window function when it fires.
 *
 * Lateness. An element is late when its timestamp + allowedLateness ≤ the watermark. A window is
 * late (gone) when its end + allowedLateness ≤ the watermark. Elements are added only to windows
 * that are not late; within the allowed lateness a late element re-fires its window (the
 * default event-time trigger fires for an element whose window end the watermark has passed).
 * An element that found no window to go to and is late goes to the late-data side output when one
 * is set, otherwise it is dropped and counted in `numLateRecordsDropped`.
 *
 * Cleanup. Every window gets a cleanup timer at end + allowedLateness (event time) or at its end
 * (processing time); it clears the contents, the trigger's state and timers, and the window
 * function's per-window state, so state does not grow on an unbounded stream.
 *
 * Everything is keyed state and per-key-group timers; nothing is kept in operator-private maps.
 */
import { EddyError, userFunctionError } from "../../core/errors.ts";
import type { Key } from "../../core/key.ts";
import type { OutputTag } from "../../core/output-tag.ts";
import { MAX_WATERMARK } from "../../core/time.ts";
import {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
  type AggregateFunction,
  type StateDescriptorBase,
} from "../../state/descriptors.ts";
import { stateFor, type KeyedStateBackend } from "../../state/keyed-state-backend.ts";
import type { Namespace } from "../../state/namespace.ts";
import type { InternalKvState } from "../../state/internal-state.ts";
import { LATE_RECORDS_DROPPED, type OneInputOperator, type OperatorContext, type Output } from "../operator.ts";
import { KeyedStateAndTimers, requireKeySelector, type TimerDomain } from "../operators/keyed-state-and-timers.ts";
import type { WindowAssigner } from "./assigners.ts";
import { MergingWindowSet, type MergeFunction, type MergingEntry } from "./merging-window-set.ts";
import { EventTimeTrigger, isFire, isPurge, type OnMergeContext, type Trigger, type TriggerResult } from "./triggers.ts";
import type { AnyWindowFunction } from "./window-functions.ts";
import { WindowFunctionRunner } from "./window-evaluation.ts";
import type { Evictor, TimestampedValue } from "./evictors.ts";
import type { Window } from "./windows.ts";
import type { LocalPartial } from "./local-partial.ts";

/** How a window's contents are kept. */
export type WindowContents<IN> =
  | { readonly kind: "reduce"; readonly reduce: (a: IN, b: IN) => IN }
  | { readonly kind: "aggregate"; readonly aggregate: AggregateFunction<IN, unknown, unknown> }
  | { readonly kind: "list" };

export interface WindowOperatorSpec<IN, W extends Window> {
  readonly assigner: WindowAssigner<IN, W>;
  readonly trigger: Trigger<IN, W>;
  readonly allowedLateness: number;
  readonly lateDataTag: OutputTag<IN> | undefined;
  readonly contents: WindowContents<IN>;
  /** With an evictor the window keeps its elements (with timestamps) whatever the function. */
  readonly evictor?: Evictor<IN, W> | undefined;
  /** Evaluates the contents; undefined emits the reduced/aggregated value itself. */
  readonly windowFunction: AnyWindowFunction<unknown, unknown, Key, W> | undefined;
  /**
   * The elements are LocalPartials of local window aggregation (local-window-aggregation.ts): their
   * `a` goes into the contents (whose reduce, or aggregate's add, merges partials).
   */
  readonly partials?: boolean;
}

export function windowOperator<IN, W extends Window>(spec: WindowOperatorSpec<IN, W>) {
  return (ctx: OperatorContext, output: Output<unknown>): OneInputOperator<IN> => new WindowOperator(spec, ctx, output);
}

/** `add` returns whether it created the window's contents (the internal states' CreatingAdd). */
type ContentsState = InternalKvState & { get(): unknown; add(value: unknown): boolean; clear(): void };

class WindowOperator<IN, W extends Window> implements OneInputOperator<IN> {
  readonly #spec: WindowOperatorSpec<IN, W>;
  readonly #ctx: OperatorContext;
  readonly #output: Output<unknown>;
  readonly #keySelector: (value: unknown) => unknown;
  readonly #keyed: KeyedStateAndTimers;
  readonly #backend: KeyedStateBackend;
  readonly #assigner: WindowAssigner<IN, W>;
  readonly #trigger: Trigger<IN, W>;
  readonly #contents: ContentsState;
  /** Merging assigners only: the current key's windows (loaded per element and timer). */
  readonly #mergingSet: MergingWindowSet<W> | undefined;
  readonly #mergeFunction: MergeFunction<W> = (mergeResult, mergedWindows, stateWindowResult, mergedStateWindows) =>
    this.#merge(mergeResult, mergedWindows, stateWindowResult, mergedStateWindows);
  readonly #triggerContext: WindowTriggerContext<W>;
  /**
   * The trigger is the built-in EventTimeTrigger (not a subclass): its onElement registers the
   * end timer, or fires once the watermark passed the end, so for a window with contents and an
   * end ahead of the watermark it does nothing new and is not called.
   */
  readonly #eventTimeTrigger: boolean;
  readonly #function: WindowFunctionRunner<W>;
  readonly #lateDropped;
  readonly #evictor: Evictor<IN, W> | undefined;
  readonly #partials: boolean;
  readonly #assignerContext: { currentProcessingTime(): number };

  constructor(spec: WindowOperatorSpec<IN, W>, ctx: OperatorContext, output: Output<unknown>) {
    this.#spec = spec;
    this.#ctx = ctx;
    this.#output = output;
    this.#assigner = spec.assigner.forSubtask?.() ?? spec.assigner;
    this.#trigger = spec.trigger;
    this.#eventTimeTrigger = Object.getPrototypeOf(spec.trigger) === EventTimeTrigger.prototype;
    if (spec.assigner.mergeWindows !== undefined && spec.trigger.canMerge?.() !== true) {
      throw new EddyError("TRIGGER_CANNOT_MERGE", `${spec.assigner.description} merges windows, but its trigger does not support merging (canMerge/onMerge)`);
    }
    this.#keySelector = requireKeySelector(ctx, 0);
    this.#keyed = new KeyedStateAndTimers(ctx, (domain, timestamp, _key, _kg, namespace) => this.#onTimer(domain, timestamp, namespace));
    this.#backend = this.#keyed.backend;
    this.#evictor = spec.evictor;
    this.#partials = spec.partials === true;
    if (this.#partials && (spec.evictor !== undefined || spec.contents.kind === "list")) {
      throw new EddyError("INTERNAL", "window contents kept as a list or with an evictor cannot take local partials");
    }
    this.#contents = contentsState(this.#backend, spec.evictor === undefined ? spec.contents : { kind: "list" });
    this.#mergingSet =
      spec.assigner.mergeWindows === undefined
        ? undefined
        : new MergingWindowSet<W>(
            this.#assigner as WindowAssigner<unknown, W>,
            this.#backend.getState(new ValueStateDescriptor<MergingEntry<W>[]>("window-merging-set", { copy: "none" })),
          );
    this.#triggerContext = new WindowTriggerContext<W>(this.#keyed, this.#backend, spec.assigner);
    this.#function = new WindowFunctionRunner<W>(ctx, this.#keyed, output, spec.windowFunction, (w) => spec.assigner.namespaceOf(w));
    this.#lateDropped = ctx.counter(LATE_RECORDS_DROPPED);
    this.#assignerContext = { currentProcessingTime: () => ctx.clock.now() };
  }

  open(): void {
    this.#function.open();
  }

  processElement(value: IN, timestamp: number, keyGroup?: number): void {
    this.#keyed.setKeyFromRecord(this.#keySelector, value, keyGroup);
    let windows: readonly W[];
    try {
      windows = this.#assigner.assignWindows(value, timestamp, this.#assignerContext);
    } catch (e) {
      throw userFunctionError(this.#ctx, e);
    }
    let skipped = true;
    const set = this.#mergingSet;
    if (set !== undefined) {
      set.load();
      for (const window of windows) {
        const actual = set.addWindow(window, this.#mergeFunction);
        if (this.#isWindowLate(actual)) {
          set.retireWindow(actual);
          continue;
        }
        skipped = false;
        const stateWindow = set.lastStateWindow;
        if (stateWindow === undefined) throw new EddyError("WINDOW_STATE_MISSING", `no state window for ${String(actual)}`);
        this.#contents.setCurrentNamespace(this.#assigner.namespaceOf(stateWindow));
        this.#add(value, timestamp);
        const result = this.#triggerOnElement(value, timestamp, actual);
        if (isFire(result)) this.#emit(actual, this.#contents.get());
        if (isPurge(result)) this.#contents.clear();
        this.#registerCleanupTimer(actual);
      }
      set.persist();
    } else {
      // hot path. A window whose contents exist already has its cleanup timer (registered with
      // the element that created them; only the cleanup, which clears the contents, removes it),
      // and under the built-in EventTimeTrigger its end timer, unless the watermark passed its end.
      const contents = this.#contents;
      for (let i = 0; i < windows.length; i++) {
        const window = windows[i]!;
        if (this.#isWindowLate(window)) continue;
        skipped = false;
        contents.setCurrentNamespace(this.#assigner.namespaceOf(window));
        const existed = !this.#add(value, timestamp);
        if (existed && this.#eventTimeTrigger && window.maxTimestamp() > this.#keyed.currentWatermark) continue;
        const result = this.#triggerOnElement(value, timestamp, window);
        if (isFire(result)) this.#emit(window, contents.get());
        if (isPurge(result)) contents.clear();
        if (!existed) this.#registerCleanupTimer(window);
      }
    }
    if (skipped && this.#isElementLate(timestamp)) {
      const tag = this.#spec.lateDataTag;
      if (tag !== undefined) this.#output.collectSide(tag, value, timestamp);
      else this.#lateDropped.inc(this.#partials ? (value as LocalPartial).n : 1);
    }
  }

  processWatermark(watermark: number): void {
    this.#keyed.timers.advanceWatermark(watermark);
    this.#output.emitWatermark(watermark);
  }

  processWatermarkStatus(idle: boolean): void {
    this.#output.emitWatermarkStatus(idle);
  }

  /** After every window fired: with `state.verify-copy-none`, the window function's states are checked. */
  endInput(): void {
    this.#keyed.endInput(1);
  }

  /** Keys holding any state of this operator, and pending timers: both return to 0 once it holds nothing. */
  stateSize(): { keys: number; timers: number } {
    return this.#keyed.stateSize();
  }

  close(): void {
    this.#keyed.close();
    this.#function.close();
  }

  #onTimer(domain: TimerDomain, timestamp: number, namespace: Namespace): void {
    const window = this.#assigner.windowOf(namespace);
    const set = this.#mergingSet;
    let stateWindow: W | undefined = window;
    if (set !== undefined) {
      set.load();
      stateWindow = set.getStateWindow(window);
      // The window was merged into another one (its timers moved there) or is gone.
      if (stateWindow === undefined) return;
    }
    this.#contents.setCurrentNamespace(this.#assigner.namespaceOf(stateWindow));
    this.#triggerContext.window = window;
    let result: TriggerResult;
    try {
      result =
        domain === "event"
          ? this.#trigger.onEventTime(timestamp, window, this.#triggerContext)
          : this.#trigger.onProcessingTime(timestamp, window, this.#triggerContext);
    } catch (e) {
      throw userFunctionError(this.#ctx, e);
    }
    if (isFire(result)) this.#emit(window, this.#contents.get());
    if (isPurge(result)) this.#contents.clear();
    if (this.#isCleanupTime(window, timestamp, domain)) this.#clearAllState(window, set, timestamp);
    set?.persist();
  }

  #triggerOnElement(value: IN, timestamp: number, window: W): TriggerResult {
    this.#triggerContext.window = window;
    try {
      return this.#trigger.onElement(value, timestamp, window, this.#triggerContext);
    } catch (e) {
      throw userFunctionError(this.#ctx, e);
    }
  }

  #merge(mergeResult: W, mergedWindows: W[], stateWindowResult: W, mergedStateWindows: W[]): void {
    if (this.#assigner.isEventTime && this.#cleanupTime(mergeResult) <= this.#keyed.currentWatermark) {
      throw new EddyError("WINDOW_MERGE_LATE", `merging produced ${String(mergeResult)}, which the watermark has already passed`);
    }
    const tc = this.#triggerContext;
    tc.window = mergeResult;
    tc.mergedWindows = mergedWindows;
    try {
      this.#trigger.onMerge!(mergeResult, tc);
      // The windows absorbed (never the element's new window, which has no timers or state).
      for (const m of mergedWindows) {
        tc.window = m;
        this.#trigger.clear(m, tc);
        // The built-in EventTimeTrigger's clear just deleted the cleanup timer when it is its own.
        if (!this.#cleanupTimerIsTriggers(m)) this.#deleteCleanupTimer(m);
      }
    } catch (e) {
      throw userFunctionError(this.#ctx, e);
    } finally {
      tc.mergedWindows = undefined;
    }
    // A window that only grew (the common case of a session) has no other state window to merge.
    if (mergedStateWindows.length > 0) {
      this.#contents.mergeNamespaces(
        this.#assigner.namespaceOf(stateWindowResult),
        mergedStateWindows.map((w) => this.#assigner.namespaceOf(w)),
      );
    }
  }

  /** Adds the element to the current window's contents; true when that created them. */
  #add(value: IN, timestamp: number): boolean {
    if (this.#partials) return this.#contents.add((value as LocalPartial).a);
    return this.#contents.add(this.#evictor === undefined ? value : ({ value, timestamp } satisfies TimestampedValue<IN>));
  }

  /** Evaluates the window's contents (nothing for an empty window). */
  #emit(window: W, contents: unknown): void {
    if (contents === undefined) return;
    if (this.#evictor !== undefined) {
      this.#emitEvicting(window, contents as TimestampedValue<IN>[]);
      return;
    }
    if (this.#spec.contents.kind === "list" && (contents as unknown[]).length === 0) return;
    this.#evaluate(window, contents);
  }

  /** Flink's EvictingWindowOperator: evict, compute over what is left, evict again, keep the rest. */
  #emitEvicting(window: W, elements: TimestampedValue<IN>[]): void {
    const evictor = this.#evictor!;
    const ctx = this.#triggerContext;
    let kept = elements;
    try {
      if (evictor.evictBefore !== undefined) kept = evictor.evictBefore(kept, window, ctx);
    } catch (e) {
      throw userFunctionError(this.#ctx, e);
    }
    if (kept.length > 0) {
      const contents = this.#spec.contents;
      let input: unknown;
      try {
        if (contents.kind === "list") {
          input = kept.map((e) => e.value);
        } else if (contents.kind === "reduce") {
          let acc = kept[0]!.value;
          for (let i = 1; i < kept.length; i++) acc = contents.reduce(acc, kept[i]!.value);
          input = acc;
        } else {
          let acc = contents.aggregate.createAccumulator();
          for (const e of kept) acc = contents.aggregate.add(e.value, acc);
          input = contents.aggregate.getResult(acc);
        }
      } catch (e) {
        throw userFunctionError(this.#ctx, e);
      }
      this.#evaluate(window, input);
    }
    try {
      if (evictor.evictAfter !== undefined) kept = evictor.evictAfter(kept, window, ctx);
    } catch (e) {
      throw userFunctionError(this.#ctx, e);
    }
    if (kept.length !== elements.length || kept.some((e, i) => e !== elements[i])) {
      (this.#contents as unknown as { update(values: unknown[]): void }).update(kept);
    }
  }

  #evaluate(window: W, contents: unknown): void {
    this.#function.evaluate(window, contents, this.#spec.contents.kind === "list");
  }

  /** At the cleanup time `time` (an event or processing time, as the assigner's). */
  #clearAllState(window: W, set: MergingWindowSet<W> | undefined, time: number): void {
    this.#contents.clear();
    const tc = this.#triggerContext;
    tc.window = window;
    // The built-in EventTimeTrigger's clear deletes its end timer: when that is the cleanup timer
    // firing now (already gone), it is not called.
    const triggerTimerGone = time === this.#cleanupTime(window) && this.#cleanupTimerIsTriggers(window);
    try {
      if (!triggerTimerGone) this.#trigger.clear(window, tc);
    } catch (e) {
      throw userFunctionError(this.#ctx, e);
    }
    this.#function.clear(window);
    set?.retireWindow(window);
  }

  /**
   * Whether the window's cleanup timer is the built-in EventTimeTrigger's end timer (event time,
   * no allowed lateness): that trigger's clear deletes it, so it need not be deleted again.
   */
  #cleanupTimerIsTriggers(window: W): boolean {
    return this.#eventTimeTrigger && this.#assigner.isEventTime && this.#cleanupTime(window) === window.maxTimestamp();
  }

  #cleanupTime(window: W): number {
    const end = window.maxTimestamp();
    if (!this.#assigner.isEventTime) return end;
    const t = end + this.#spec.allowedLateness;
    return t >= end ? t : MAX_WATERMARK;
  }

  #isCleanupTime(window: W, time: number, domain: TimerDomain): boolean {
    if ((domain === "event") !== this.#assigner.isEventTime) return false;
    return time === this.#cleanupTime(window);
  }

  #registerCleanupTimer(window: W): void {
    const t = this.#cleanupTime(window);
    if (t === MAX_WATERMARK) return; // the global window is never cleaned up by time
    const ns = this.#assigner.namespaceOf(window);
    const key = this.#backend.getCurrentKey();
    const kg = this.#backend.getCurrentKeyGroup();
    if (this.#assigner.isEventTime) this.#keyed.timers.registerEventTimeTimer(key, kg, ns, t);
    else this.#keyed.timers.registerProcessingTimeTimer(key, kg, ns, t);
  }

  #deleteCleanupTimer(window: W): void {
    const t = this.#cleanupTime(window);
    if (t === MAX_WATERMARK) return;
    const ns = this.#assigner.namespaceOf(window);
    const key = this.#backend.getCurrentKey();
    const kg = this.#backend.getCurrentKeyGroup();
    if (this.#assigner.isEventTime) this.#keyed.timers.deleteEventTimeTimer(key, kg, ns, t);
    else this.#keyed.timers.deleteProcessingTimeTimer(key, kg, ns, t);
  }

  #isWindowLate(window: W): boolean {
    return this.#assigner.isEventTime && this.#cleanupTime(window) <= this.#keyed.currentWatermark;
  }

  #isElementLate(timestamp: number): boolean {
    return this.#assigner.isEventTime && timestamp + this.#spec.allowedLateness <= this.#keyed.currentWatermark;
  }
}

function contentsState<IN>(backend: KeyedStateBackend, contents: WindowContents<IN>): ContentsState {
  switch (contents.kind) {
    case "reduce":
      return backend.getReducingState(new ReducingStateDescriptor<IN>("window-contents", contents.reduce)) as unknown as ContentsState;
    case "aggregate":
      return backend.getAggregatingState(new AggregatingStateDescriptor("window-contents", contents.aggregate)) as unknown as ContentsState;
    case "list":
      return backend.getListState(new ListStateDescriptor<IN>("window-contents")) as unknown as ContentsState;
  }
}

class WindowTriggerContext<W extends Window> implements OnMergeContext {
  window!: W;
  mergedWindows: W[] | undefined;
  readonly #keyed: KeyedStateAndTimers;
  readonly #backend: KeyedStateBackend;
  readonly #assigner: WindowAssigner<unknown, W>;

  constructor(keyed: KeyedStateAndTimers, backend: KeyedStateBackend, assigner: WindowAssigner<never, W>) {
    this.#keyed = keyed;
    this.#backend = backend;
    this.#assigner = assigner as WindowAssigner<unknown, W>;
  }

  currentProcessingTime(): number {
    return this.#keyed.timers.currentProcessingTime();
  }
  currentWatermark(): number {
    return this.#keyed.currentWatermark;
  }
  registerEventTimeTimer(time: number): void {
    const b = this.#backend;
    this.#keyed.timers.registerEventTimeTimer(b.getCurrentKey(), b.getCurrentKeyGroup(), this.#assigner.namespaceOf(this.window), time);
  }
  registerProcessingTimeTimer(time: number): void {
    const b = this.#backend;
    this.#keyed.timers.registerProcessingTimeTimer(b.getCurrentKey(), b.getCurrentKeyGroup(), this.#assigner.namespaceOf(this.window), time);
  }
  deleteEventTimeTimer(time: number): void {
    const b = this.#backend;
    this.#keyed.timers.deleteEventTimeTimer(b.getCurrentKey(), b.getCurrentKeyGroup(), this.#assigner.namespaceOf(this.window), time);
  }
  deleteProcessingTimeTimer(time: number): void {
    const b = this.#backend;
    this.#keyed.timers.deleteProcessingTimeTimer(b.getCurrentKey(), b.getCurrentKeyGroup(), this.#assigner.namespaceOf(this.window), time);
  }
  getPartitionedState<S>(descriptor: StateDescriptorBase): S {
    const state = stateFor(this.#backend, descriptor);
    state.setCurrentNamespace(this.#assigner.namespaceOf(this.window));
    return state as unknown as S;
  }
  mergePartitionedState(descriptor: StateDescriptorBase): void {
    const merged = this.mergedWindows;
    if (merged === undefined) throw new EddyError("NOT_MERGING", "mergePartitionedState is only valid in onMerge");
    const state = stateFor(this.#backend, descriptor);
    state.mergeNamespaces(
      this.#assigner.namespaceOf(this.window),
      merged.map((w) => this.#assigner.namespaceOf(w)),
    );
  }
}
