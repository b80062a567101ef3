/**
 * Triggers decide when a window is evaluated (FIRE) and when its contents are dropped (PURGE).
 * A trigger keeps what it needs in keyed state scoped to (key, window) through its context, and
 * registers timers for the window's key; it never keeps private maps, so checkpoints capture it.
 */
import { ReducingStateDescriptor, type StateDescriptorBase } from "../../state/descriptors.ts";
import type { ReducingState, ValueState, ListState, MapState, AggregatingState } from "../../state/state.ts";
import type { Window } from "./windows.ts";

export type TriggerResult = "CONTINUE" | "FIRE" | "PURGE" | "FIRE_AND_PURGE";

export const TriggerResult = {
  CONTINUE: "CONTINUE",
  FIRE: "FIRE",
  PURGE: "PURGE",
  FIRE_AND_PURGE: "FIRE_AND_PURGE",
} as const;

export function isFire(result: TriggerResult): boolean {
  return result === "FIRE" || result === "FIRE_AND_PURGE";
}

export function isPurge(result: TriggerResult): boolean {
  return result === "PURGE" || result === "FIRE_AND_PURGE";
}

/** State a trigger can ask for; scoped to the current key and window. */
export type PartitionedState = ValueState<unknown> | ListState<unknown> | MapState<never, unknown> | ReducingState<unknown> | AggregatingState<never, unknown>;

export interface TriggerContext {
  currentProcessingTime(): number;
  currentWatermark(): number;
  registerEventTimeTimer(time: number): void;
  registerProcessingTimeTimer(time: number): void;
  deleteEventTimeTimer(time: number): void;
  deleteProcessingTimeTimer(time: number): void;
  /** Keyed state of the current key, scoped to the window being evaluated. */
  getPartitionedState<S>(descriptor: StateDescriptorBase): S;
}

export interface OnMergeContext extends TriggerContext {
  /** Merges this state of the windows being merged into the merged window (reducing, aggregating, list). */
  mergePartitionedState(descriptor: StateDescriptorBase): void;
}

export interface Trigger<T, W extends Window> {
  onElement(element: T, timestamp: number, window: W, ctx: TriggerContext): TriggerResult;
  onEventTime(time: number, window: W, ctx: TriggerContext): TriggerResult;
  onProcessingTime(time: number, window: W, ctx: TriggerContext): TriggerResult;
  /** Whether the trigger supports merging windows (sessions); needs `onMerge`. */
  canMerge?(): boolean;
  onMerge?(window: W, ctx: OnMergeContext): void;
  /** The window is gone: delete timers and state the trigger registered for it. */
  clear(window: W, ctx: TriggerContext): void;
}

/** Fires once the watermark passes the end of the window (and again for each late element). */
export class EventTimeTrigger implements Trigger<unknown, Window> {
  static create<T, W extends Window>(): Trigger<T, W> {
    return new EventTimeTrigger() as Trigger<T, W>;
  }
  onElement(_e: unknown, _t: number, window: Window, ctx: TriggerContext): TriggerResult {
    if (window.maxTimestamp() <= ctx.currentWatermark()) return "FIRE"; // late, within allowed lateness
    ctx.registerEventTimeTimer(window.maxTimestamp());
    return "CONTINUE";
  }
  onEventTime(time: number, window: Window): TriggerResult {
    return time === window.maxTimestamp() ? "FIRE" : "CONTINUE";
  }
  onProcessingTime(): TriggerResult {
    return "CONTINUE";
  }
  canMerge(): boolean {
    return true;
  }
  onMerge(window: Window, ctx: OnMergeContext): void {
    // Only register if the watermark has not passed the merged window's end yet: the operator
    // fires (and cleans) windows whose end it has passed.
    if (window.maxTimestamp() > ctx.currentWatermark()) ctx.registerEventTimeTimer(window.maxTimestamp());
  }
  clear(window: Window, ctx: TriggerContext): void {
    ctx.deleteEventTimeTimer(window.maxTimestamp());
  }
}

/** Fires when processing time reaches the end of the window. */
export class ProcessingTimeTrigger implements Trigger<unknown, Window> {
  static create<T, W extends Window>(): Trigger<T, W> {
    return new ProcessingTimeTrigger() as Trigger<T, W>;
  }
  onElement(_e: unknown, _t: number, window: Window, ctx: TriggerContext): TriggerResult {
    ctx.registerProcessingTimeTimer(window.maxTimestamp());
    return "CONTINUE";
  }
  onEventTime(): TriggerResult {
    return "CONTINUE";
  }
  onProcessingTime(): TriggerResult {
    return "FIRE";
  }
  canMerge(): boolean {
    return true;
  }
  onMerge(window: Window, ctx: OnMergeContext): void {
    if (window.maxTimestamp() > ctx.currentProcessingTime()) ctx.registerProcessingTimeTimer(window.maxTimestamp());
  }
  clear(window: Window, ctx: TriggerContext): void {
    ctx.deleteProcessingTimeTimer(window.maxTimestamp());
  }
}

/** Never fires: the default of GlobalWindows, which need an explicit trigger. */
export class NeverTrigger implements Trigger<unknown, Window> {
  static create<T, W extends Window>(): Trigger<T, W> {
    return new NeverTrigger() as Trigger<T, W>;
  }
  onElement(): TriggerResult {
    return "CONTINUE";
  }
  onEventTime(): TriggerResult {
    return "CONTINUE";
  }
  onProcessingTime(): TriggerResult {
    return "CONTINUE";
  }
  canMerge(): boolean {
    return true;
  }
  onMerge(): void {}
  clear(): void {}
}

const sum = (a: number, b: number): number => a + b;
const min = (a: number, b: number): number => Math.min(a, b);

/** Fires every `count` elements of a window (the count restarts after each firing). */
export class CountTrigger implements Trigger<unknown, Window> {
  readonly #count: number;
  readonly #state = new ReducingStateDescriptor<number>("count-trigger", sum, { copy: "none" });

  private constructor(count: number) {
    if (!Number.isInteger(count) || count < 1) throw new RangeError(`CountTrigger.of needs an integer ≥ 1, got ${count}`);
    this.#count = count;
  }
  static of<T, W extends Window>(count: number): Trigger<T, W> {
    return new CountTrigger(count) as Trigger<T, W>;
  }
  onElement(_e: unknown, _t: number, _w: Window, ctx: TriggerContext): TriggerResult {
    const state = ctx.getPartitionedState<ReducingState<number>>(this.#state);
    state.add(1);
    if ((state.get() ?? 0) >= this.#count) {
      state.clear();
      return "FIRE";
    }
    return "CONTINUE";
  }
  onEventTime(): TriggerResult {
    return "CONTINUE";
  }
  onProcessingTime(): TriggerResult {
    return "CONTINUE";
  }
  canMerge(): boolean {
    return true;
  }
  onMerge(_w: Window, ctx: OnMergeContext): void {
    ctx.mergePartitionedState(this.#state);
  }
  clear(_w: Window, ctx: TriggerContext): void {
    ctx.getPartitionedState<ReducingState<number>>(this.#state).clear();
  }
}

/** Turns every FIRE of the nested trigger into FIRE_AND_PURGE. */
export class PurgingTrigger<T, W extends Window> implements Trigger<T, W> {
  readonly #nested: Trigger<T, W>;
  private constructor(nested: Trigger<T, W>) {
    this.#nested = nested;
  }
  static of<T, W extends Window>(nested: Trigger<T, W>): Trigger<T, W> {
    return new PurgingTrigger(nested);
  }
  #purge(result: TriggerResult): TriggerResult {
    return isFire(result) ? "FIRE_AND_PURGE" : result;
  }
  onElement(e: T, t: number, w: W, ctx: TriggerContext): TriggerResult {
    return this.#purge(this.#nested.onElement(e, t, w, ctx));
  }
  onEventTime(time: number, w: W, ctx: TriggerContext): TriggerResult {
    return this.#purge(this.#nested.onEventTime(time, w, ctx));
  }
  onProcessingTime(time: number, w: W, ctx: TriggerContext): TriggerResult {
    return this.#purge(this.#nested.onProcessingTime(time, w, ctx));
  }
  canMerge(): boolean {
    return this.#nested.canMerge?.() ?? false;
  }
  onMerge(w: W, ctx: OnMergeContext): void {
    this.#nested.onMerge?.(w, ctx);
  }
  clear(w: W, ctx: TriggerContext): void {
    this.#nested.clear(w, ctx);
  }
}

/**
 * Fires every `interval` ms of event time while the window is open, and at its end (Flink's
 * ContinuousEventTimeTrigger, as of FLINK-20443): a firing is never scheduled past the window's
 * last timestamp, so it does not fire again within the allowed lateness. Its timers are Flink's:
 * `clear` deletes only the next-firing timer (the window operator's cleanup deals with the end),
 * and `onMerge` registers only the merged next firing (onElement registers the merged end).
 */
export class ContinuousEventTimeTrigger implements Trigger<unknown, Window> {
  readonly #interval: number;
  readonly #next = new ReducingStateDescriptor<number>("continuous-event-time-fire", min, { copy: "none" });

  private constructor(interval: number) {
    if (!(interval > 0) || !Number.isFinite(interval)) throw new RangeError(`ContinuousEventTimeTrigger.of needs an interval > 0 ms`);
    this.#interval = interval;
  }
  static of<T, W extends Window>(interval: number): Trigger<T, W> {
    return new ContinuousEventTimeTrigger(interval) as Trigger<T, W>;
  }
  onElement(_e: unknown, timestamp: number, window: Window, ctx: TriggerContext): TriggerResult {
    if (window.maxTimestamp() <= ctx.currentWatermark()) return "FIRE";
    ctx.registerEventTimeTimer(window.maxTimestamp());
    const next = ctx.getPartitionedState<ReducingState<number>>(this.#next);
    if (next.get() === undefined) {
      const start = timestamp - (((timestamp % this.#interval) + this.#interval) % this.#interval);
      this.#scheduleAfter(start, window, next, ctx);
    }
    return "CONTINUE";
  }
  onEventTime(time: number, window: Window, ctx: TriggerContext): TriggerResult {
    if (time === window.maxTimestamp()) return "FIRE";
    const next = ctx.getPartitionedState<ReducingState<number>>(this.#next);
    if (next.get() === time) {
      next.clear();
      this.#scheduleAfter(time, window, next, ctx);
      return "FIRE";
    }
    return "CONTINUE";
  }
  #scheduleAfter(time: number, window: Window, next: ReducingState<number>, ctx: TriggerContext): void {
    const fireAt = Math.min(time + this.#interval, window.maxTimestamp());
    next.add(fireAt);
    ctx.registerEventTimeTimer(fireAt);
  }
  onProcessingTime(): TriggerResult {
    return "CONTINUE";
  }
  canMerge(): boolean {
    return true;
  }
  onMerge(_window: Window, ctx: OnMergeContext): void {
    ctx.mergePartitionedState(this.#next);
    const next = ctx.getPartitionedState<ReducingState<number>>(this.#next).get();
    if (next !== undefined) ctx.registerEventTimeTimer(next);
  }
  clear(_window: Window, ctx: TriggerContext): void {
    const next = ctx.getPartitionedState<ReducingState<number>>(this.#next);
    const at = next.get();
    if (at === undefined) return;
    ctx.deleteEventTimeTimer(at);
    next.clear();
  }
}

/** Fires every `interval` ms of processing time while the window has elements. */
export class ContinuousProcessingTimeTrigger implements Trigger<unknown, Window> {
  readonly #interval: number;
  readonly #next = new ReducingStateDescriptor<number>("continuous-processing-time-fire", min, { copy: "none" });

  private constructor(interval: number) {
    if (!(interval > 0) || !Number.isFinite(interval)) throw new RangeError(`ContinuousProcessingTimeTrigger.of needs an interval > 0 ms`);
    this.#interval = interval;
  }
  static of<T, W extends Window>(interval: number): Trigger<T, W> {
    return new ContinuousProcessingTimeTrigger(interval) as Trigger<T, W>;
  }
  onElement(_e: unknown, _t: number, _w: Window, ctx: TriggerContext): TriggerResult {
    const next = ctx.getPartitionedState<ReducingState<number>>(this.#next);
    if (next.get() === undefined) {
      const now = ctx.currentProcessingTime();
      const fireAt = now - (now % this.#interval) + this.#interval;
      ctx.registerProcessingTimeTimer(fireAt);
      next.add(fireAt);
    }
    return "CONTINUE";
  }
  onEventTime(): TriggerResult {
    return "CONTINUE";
  }
  onProcessingTime(time: number, _w: Window, ctx: TriggerContext): TriggerResult {
    const next = ctx.getPartitionedState<ReducingState<number>>(this.#next);
    if (next.get() === time) {
      next.clear();
      next.add(time + this.#interval);
      ctx.registerProcessingTimeTimer(time + this.#interval);
      return "FIRE";
    }
    return "CONTINUE";
  }
  canMerge(): boolean {
    return true;
  }
  onMerge(_w: Window, ctx: OnMergeContext): void {
    ctx.mergePartitionedState(this.#next);
    const next = ctx.getPartitionedState<ReducingState<number>>(this.#next).get();
    if (next !== undefined) ctx.registerProcessingTimeTimer(next);
  }
  clear(_w: Window, ctx: TriggerContext): void {
    const next = ctx.getPartitionedState<ReducingState<number>>(this.#next);
    const at = next.get();
    if (at !== undefined) ctx.deleteProcessingTimeTimer(at);
    next.clear();
  }
}
