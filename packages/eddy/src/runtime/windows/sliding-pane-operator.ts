/**
 * Sliding event-time windows evaluated by reduce or aggregate in O(1) state work per element,
 * whatever size/slide is (Arroyo's and Flink's "slicing"): every element goes into exactly one
 * *pane* (a slice of length `slide`, identified by its start), and a window [s, s + size) is the
 * merge of its size/slide panes, computed when the window fires. The general window operator
 * would instead update size/slide window accumulators and register as many timers per element.
 *
 * Emissions are the same as the general operator with the default event-time trigger: a window
 * fires once when the watermark passes its end (if it has contents), and again for each late
 * element that arrives within the allowed lateness; elements too late for every window go to the
 * late-data side output or are dropped and counted.
 *
 * Timers (all keyed, per key group):
 * - fire timers (namespace "fire") at window ends. An element in pane p registers the end of the
 *   first window containing p that the watermark has not passed, when the element creates p;
 *   when a window fires it registers the next window's end if that window holds any pane. So
 *   once a pane has a fire timer, every later window containing it fires in turn, the last of
 *   them (the one starting at p) included, and later elements of p register nothing. When that
 *   first window also holds pane p - slide, p registers nothing either: p - slide's firings reach
 *   that window, and every window after it holds p until the one starting at p.
 * - with allowed lateness, cleanup timers (namespace = pane start) one past p + size - 1 +
 *   allowedLateness, the cleanup time of the last window that contains the pane; they delete the
 *   pane. Without allowed lateness no window fires again, so the final firing of the window
 *   starting at p deletes p instead (once the key's firings in that watermark advance are over):
 *   one timer per pane less. (Snapshots taken before this change may hold cleanup timers of such
 *   panes: they still delete the pane, or find it gone.)
 *
 * Firings read panes through a sweep (pane-sweep.ts): a key's panes read in one pass, windows
 * merged from them in about three merges each, however many panes a window has. Event time runs
 * ahead of the watermark, so one advance fires many windows per key, interleaved with other keys'
 * (timers fire in time order, so windows are emitted in end order across keys, as before): the
 * key's first firing in an advance opens its sweep with its panes up to the watermark, its later
 * firings move it on, and the firing after which the key fires no more in this advance closes it,
 * deleting then the panes its firings passed (without allowed lateness). No element arrives
 * during an advance, so the panes do not change under a sweep. The sweeps hold at most
 * MAX_SWEPT_PANES panes at once; past it a firing reads only its window's panes. A late element's
 * firings share one sweep too.
 *
 * Pane accumulators are stored without copies (the operator owns them); a window's merge starts
 * from copies and merges copies into it (the sweep's ownership rules), so user merge/reduce
 * functions that mutate either argument cannot corrupt stored panes.
 *
 * A pane is stored under its number, (start - offset) / slide, not its start: a key's panes are
 * cells of a Map keyed by namespace, and an epoch-millisecond start is a double, which V8 keeps in
 * a heap number of its own (allocated with every pane, loaded by every comparison of a lookup),
 * where a number below 2^31 (slides of a second and more, for dates before 2038) is a small
 * integer compared in place: sliding 10 s / 2 s ran 1.15× faster (bench/windows.ts's job alone,
 * median of 5 alternated pairs, 2026-12-04). Sweeps work in pane numbers; timers keep times, and a cleanup
 * timer's namespace stays the pane's start. Panes of a snapshot taken before (state
 * `window-panes`, keyed by start) move to their numbers when the operator starts.
 */
import { EddyError, userFunctionError } from "../../core/errors.ts";
import { mapKeyOf, type Key, type MapKey } from "../../core/key.ts";
import type { OutputTag } from "../../core/output-tag.ts";
import { hasTimestamp } from "../../core/time.ts";
import { ValueStateDescriptor } from "../../state/descriptors.ts";
import type { KeyedStateBackend } from "../../state/keyed-state-backend.ts";
import type { Namespace } from "../../state/namespace.ts";
import type { InternalValueState } from "../../state/internal-state.ts";
import { LATE_RECORDS_DROPPED, type OneInputOperator, type OperatorContext, type Output } from "../operator.ts";
import { KeyedStateAndTimers, requireKeySelector, type TimerDomain } from "../operators/keyed-state-and-timers.ts";
import type { AnyWindowFunction } from "./window-functions.ts";
import { WindowFunctionRunner } from "./window-evaluation.ts";
import { TimeWindow, windowStart } from "./windows.ts";
import type { LocalPartial } from "./local-partial.ts";
import { FIRST_PANE, LATER_PANES, PaneSweep } from "./pane-sweep.ts";

/** How panes combine: `add` folds an element into a pane, `merge` combines two panes, `result` turns the merge into the output. */
export interface PaneFunctions<IN> {
  create(value: IN): unknown;
  add(acc: unknown, value: IN): unknown;
  merge(a: unknown, b: unknown): unknown;
  result(acc: unknown): unknown;
}

export interface SlidingPaneSpec<IN> {
  readonly size: number;
  readonly slide: number;
  readonly offset: number;
  readonly description: string;
  readonly allowedLateness: number;
  readonly lateDataTag: OutputTag<IN> | undefined;
  readonly panes: PaneFunctions<IN>;
  readonly windowFunction: AnyWindowFunction<unknown, unknown, Key, TimeWindow> | undefined;
  /** The elements are LocalPartials (local-window-aggregation.ts): a late one counts its elements. */
  readonly partials?: boolean;
  /** Panes the sweeps of one watermark advance hold at most (default MAX_SWEPT_PANES; tests set it low). */
  readonly maxSweptPanes?: number;
}

const FIRE: Namespace = "fire";

/** Panes under their number, (start - offset) / slide (see the header). */
const PANES = "window-pane-numbers";
/** Panes under their start, as snapshots taken before 2026-12-04's change hold them: moved to PANES on restore. */
const PANES_BY_START = "window-panes";

/**
 * Panes the sweeps of one watermark advance hold at most (plus one key's): ~24 bytes each, and
 * the partial merges. Past it, a firing reads only its own window's panes (one sweep per firing).
 */
const MAX_SWEPT_PANES = 1 << 18;

/**
 * Emptied sweeps kept for reuse (a watermark advance fires thousands of keys), each only if it held
 * at most MAX_POOLED_PANES panes: its arrays are as long as the most it ever held, so the pool
 * stays under 4,096 × 64 × 3 slots (~6 MB) however many panes a key has.
 */
const MAX_FREE_SWEEPS = 4096;
const MAX_POOLED_PANES = 64;

export function slidingPaneOperator<IN>(spec: SlidingPaneSpec<IN>) {
  return (ctx: OperatorContext, output: Output<unknown>): OneInputOperator<IN> => new SlidingPaneOperator(spec, ctx, output);
}

class SlidingPaneOperator<IN> implements OneInputOperator<IN> {
  readonly #spec: SlidingPaneSpec<IN>;
  readonly #ctx: OperatorContext;
  readonly #output: Output<unknown>;
  readonly #keySelector: (value: unknown) => unknown;
  readonly #keyed: KeyedStateAndTimers;
  readonly #backend: KeyedStateBackend;
  readonly #panes: InternalValueState<unknown>;
  /**
   * The keys firing during the current watermark advance, each with its panes read once (map
   * identity → sweep; see the header). Empty outside `processWatermark`.
   */
  readonly #sweeps = new Map<MapKey, PaneSweep>();
  /** Panes held by `#sweeps`. */
  #sweptPanes = 0;
  readonly #maxSweptPanes: number;
  /** For one element's late firings, and firings past MAX_SWEPT_PANES: loaded, used, emptied. */
  readonly #scratch: PaneSweep;
  /** Emptied sweeps for the next keys' firings: a key's sweep lives for one advance, so they are reused, not made. */
  readonly #freeSweeps: PaneSweep[] = [];
  readonly #function: WindowFunctionRunner<TimeWindow>;
  readonly #lateDropped;
  readonly #size: number;
  readonly #slide: number;

  constructor(spec: SlidingPaneSpec<IN>, ctx: OperatorContext, output: Output<unknown>) {
    if (spec.size % spec.slide !== 0) {
      throw new EddyError("INTERNAL", `pane evaluation needs size (${spec.size}) to be a multiple of slide (${spec.slide})`);
    }
    this.#spec = spec;
    this.#ctx = ctx;
    this.#output = output;
    this.#size = spec.size;
    this.#slide = spec.slide;
    this.#keySelector = requireKeySelector(ctx, 0);
    this.#keyed = new KeyedStateAndTimers(ctx, (domain, timestamp, key, _kg, namespace) => this.#onTimer(domain, timestamp, key, namespace));
    this.#backend = this.#keyed.backend;
    this.#panes = this.#backend.getState(new ValueStateDescriptor<unknown>(PANES, { copy: "none" }));
    if (this.#backend.stateNames().includes(PANES_BY_START)) this.#numberRestoredPanes();
    // Panes have no per-window state, so a ProcessWindowFunction's windowState() is refused.
    this.#function = new WindowFunctionRunner<TimeWindow>(ctx, this.#keyed, output, spec.windowFunction, undefined);
    this.#lateDropped = ctx.counter(LATE_RECORDS_DROPPED);
    this.#scratch = new PaneSweep(spec.panes.merge);
    this.#maxSweptPanes = spec.maxSweptPanes ?? MAX_SWEPT_PANES;
  }

  open(): void {
    this.#function.open();
  }

  processElement(value: IN, timestamp: number, keyGroup?: number): void {
    this.#keyed.setKeyFromRecord(this.#keySelector, value, keyGroup);
    if (!hasTimestamp(timestamp)) {
      throw new EddyError("NO_TIMESTAMP", `${this.#spec.description} needs record timestamps: use assignTimestampsAndWatermarks(...) or a source that sets them`, { operator: this.#ctx.operatorName, subtask: this.#ctx.subtaskIndex });
    }
    const watermark = this.#keyed.currentWatermark;
    const lateness = this.#spec.allowedLateness;
    const pane = windowStart(timestamp, this.#spec.offset, this.#slide);
    const lastEnd = pane + this.#size - 1; // end of the last window containing the pane
    if (lastEnd + lateness <= watermark) {
      // Every window of this element has been cleaned up.
      if (timestamp + lateness <= watermark) {
        const tag = this.#spec.lateDataTag;
        if (tag !== undefined) this.#output.collectSide(tag, value, timestamp);
        else this.#lateDropped.inc(this.#spec.partials === true ? (value as LocalPartial).n : 1);
      }
      return;
    }
    const panes = this.#panes;
    const number = (pane - this.#spec.offset) / this.#slide;
    panes.setCurrentNamespace(number);
    let created: boolean;
    try {
      created = panes.accumulate(value, this.#spec.panes);
    } catch (e) {
      throw userFunctionError(this.#ctx, e);
    }
    // Windows containing the pane end at pane + slide - 1, ..., lastEnd. Those the watermark has
    // passed (but not cleaned up) fire again now, from the key's panes read once.
    let end = pane + this.#slide - 1;
    let sweep: PaneSweep | undefined;
    for (; end <= lastEnd && end <= watermark; end += this.#slide) {
      if (end + lateness <= watermark) continue;
      sweep ??= this.#scratch.load(panes, this.#number(end - this.#size + 1), this.#number(Math.min(lastEnd, watermark)));
      this.#fire(end, sweep);
    }
    sweep?.empty();
    // hot path: a pane that existed already has its timers: its cleanup timer (only its cleanup
    // deletes the pane), and a fire timer at the first window containing it that the watermark
    // has not passed (registered with the pane, then passed along the chain of firings).
    if (!created) return;
    const key = this.#backend.getCurrentKey();
    const kg = this.#backend.getCurrentKeyGroup();
    const timers = this.#keyed.timers;
    // One past the last window's cleanup time, so that window's final firing (a timer at the
    // same time) still sees the pane. Without lateness, that firing deletes the pane.
    if (lateness !== 0) timers.registerEventTimeTimer(key, kg, pane, lastEnd + lateness + 1);
    if (end > lastEnd) return;
    // The previous pane's firings reach every window containing it that the watermark has not
    // passed, and then the next one if it holds a pane (this one): so when the first window left
    // to fire holds the previous pane too, this pane needs no fire timer of its own. One timer per
    // key instead of one per pane when many panes wait for the watermark (event time running
    // ahead of it, as when a job catches up).
    if (end <= lastEnd - this.#slide && this.#hasPane(number - 1)) return;
    timers.registerEventTimeTimer(key, kg, FIRE, end);
  }

  processWatermark(watermark: number): void {
    try {
      this.#keyed.timers.advanceWatermark(watermark);
    } finally {
      // Every key's firings ended within the advance (its last one closed its sweep) unless a
      // user function threw.
      if (this.#sweeps.size !== 0) this.#closeSweeps();
    }
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

  #onTimer(domain: TimerDomain, timestamp: number, key: Key, namespace: Namespace): void {
    if (domain !== "event") return;
    if (namespace === FIRE) {
      // The key's firings in this advance run through one sweep over its panes, read at the first.
      const mapKey = mapKeyOf(key);
      const sweep = this.#sweeps.get(mapKey) ?? this.#openSweep(mapKey, timestamp);
      const fired = this.#fire(timestamp, sweep);
      const first = timestamp - this.#size + 1;
      if (this.#spec.allowedLateness === 0 && (fired & FIRST_PANE) !== 0) {
        // No later window contains the window's first pane, and this one never fires again: it
        // goes when the sweep closes.
        sweep.passedPanes.push(this.#number(first));
      }
      // Chain to the next window if it holds any pane: one of this window's but its first, or the
      // pane only the next window has.
      const next = timestamp + this.#slide;
      const following = this.#number(timestamp + 1);
      const chained = (fired & LATER_PANES) !== 0 || (sweep.covers(following) ? sweep.holds(following) : this.#hasPane(following));
      if (chained) {
        this.#keyed.timers.registerEventTimeTimer(key, this.#backend.getCurrentKeyGroup(), FIRE, next);
      }
      // The key fires again in this advance only at `next`; the scratch serves one firing.
      if (!chained || next > this.#keyed.currentWatermark || sweep === this.#scratch) this.#closeSweep(mapKey, sweep);
      return;
    }
    // A pane's cleanup time: no window needs it any more (the timer's namespace is the pane's start).
    this.#panes.setCurrentNamespace(this.#number(namespace as number));
    this.#panes.clear();
  }

  /**
   * The sweep of the current key's firings in this advance, from the window ending at `end` on:
   * its panes up to the watermark, read once. Past MAX_SWEPT_PANES, the scratch sweep with this
   * window's panes only.
   */
  #openSweep(mapKey: MapKey, end: number): PaneSweep {
    const from = end - this.#size + 1;
    if (this.#sweptPanes >= this.#maxSweptPanes) return this.#scratch.load(this.#panes, this.#number(from), this.#number(end));
    const sweep = (this.#freeSweeps.pop() ?? new PaneSweep(this.#spec.panes.merge)).load(this.#panes, this.#number(from), this.#number(this.#keyed.currentWatermark));
    this.#sweeps.set(mapKey, sweep);
    this.#sweptPanes += sweep.count;
    return sweep;
  }

  /** The current key's firings in this advance are over: deletes its passed panes, drops its sweep. */
  #closeSweep(mapKey: MapKey, sweep: PaneSweep): void {
    const panes = this.#panes;
    const passed = sweep.passedPanes;
    for (let i = 0; i < passed.length; i++) {
      panes.setCurrentNamespace(passed[i]!);
      panes.clear();
    }
    if (sweep !== this.#scratch) {
      this.#sweeps.delete(mapKey);
      this.#sweptPanes -= sweep.count;
    }
    const pooled = sweep !== this.#scratch && sweep.count <= MAX_POOLED_PANES && this.#freeSweeps.length < MAX_FREE_SWEEPS;
    sweep.empty();
    if (pooled) this.#freeSweeps.push(sweep);
  }

  /** After a failed advance: drops every sweep (the job fails; nothing is deleted). */
  #closeSweeps(): void {
    for (const sweep of this.#sweeps.values()) sweep.empty();
    this.#sweeps.clear();
    this.#sweptPanes = 0;
    this.#scratch.empty();
  }

  /** Whether the current key has pane number `number`. */
  #hasPane(number: number): boolean {
    this.#panes.setCurrentNamespace(number);
    return this.#panes.holdsValue();
  }

  /** The number of the pane holding time `t` (a pane's start gives its own; ±Infinity stays). */
  #number(t: number): number {
    return Math.floor((t - this.#spec.offset) / this.#slide);
  }

  /**
   * Moves the panes of a snapshot that stored them under their start (PANES_BY_START) to their
   * numbers, key by key, leaving that state empty. A start that is not a pane start of this
   * job's slide (the slide changed) goes to the pane holding it, merged with what is there.
   */
  #numberRestoredPanes(): void {
    const backend = this.#backend;
    const byStart = backend.getState(new ValueStateDescriptor<unknown>(PANES_BY_START, { copy: "none" }));
    const panes = this.#panes;
    const range = this.#ctx.keyGroupRange;
    for (let kg = range.start; kg <= range.end; kg++) {
      for (const { key, namespace, value } of [...backend.entries(PANES_BY_START, kg)]) {
        backend.setCurrentKey(key, kg);
        byStart.setCurrentNamespace(namespace);
        byStart.clear();
        if (typeof namespace !== "number") {
          throw new EddyError("CHECKPOINT_CORRUPT", `operator '${this.#ctx.operatorName}': restored pane state '${PANES_BY_START}' holds namespace ${JSON.stringify(namespace)}, not a pane start`);
        }
        panes.setCurrentNamespace(this.#number(namespace));
        const there = panes.value();
        let merged = value;
        try {
          if (there !== undefined) merged = this.#spec.panes.merge(there, value);
        } catch (e) {
          throw userFunctionError(this.#ctx, e);
        }
        panes.update(merged);
      }
    }
  }

  /**
   * Evaluates the window ending at `end` (inclusive) from its panes in `sweep`, if it has any.
   * Returns which panes it found: FIRST_PANE (its first), LATER_PANES (any other), both or none (0).
   */
  #fire(end: number, sweep: PaneSweep): number {
    const start = end - this.#size + 1;
    let found: number;
    let merged: unknown;
    try {
      found = sweep.moveTo(this.#number(start), this.#number(end));
      if (found === 0) return 0;
      merged = this.#spec.panes.result(sweep.merged());
    } catch (e) {
      throw userFunctionError(this.#ctx, e);
    }
    this.#function.evaluate(new TimeWindow(start, start + this.#size), merged, false);
    return found;
  }
}
