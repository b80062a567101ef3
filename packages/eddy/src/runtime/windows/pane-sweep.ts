/**
 * One key's panes, read from its pane state in one pass, and the windows over them merged in turn
 * (windows only move forward): how the sliding pane operator evaluates the windows a key fires one
 * after another — its firings during one watermark advance, or the windows one late element fires
 * again.
 *
 * A window is the merge of its panes in pane order. Consecutive windows share all but a pane at
 * each end, so the sweep keeps the window's panes as a queue made of two stacks (the "two-stacks"
 * sliding-window aggregation; Tangwongsan, Hirzel and Schneider, "Sliding-Window Aggregation
 * Algorithms", 2017): the front, panes [lo, mid), as suffix merges (`suffix[i]` = panes i … mid-1),
 * and the back, panes [mid, hi), as one running merge. A window is front ⊕ back; a pane entering
 * the back costs one merge; when the window's first pane leaves the front empty, the window's panes
 * all move to the front (one merge per pane, each pane moves once). About three merges and two
 * copies per window however many panes it has, where merging its panes one by one takes
 * size/slide - 1. It needs `merge` to be associative, as evaluating windows from panes always did
 * (the panes regroup the elements); the order of panes is kept (front before back).
 *
 * Ownership: a pane's accumulator (the stored object) and the sweep's partial merges are only
 * ever the second argument of `merge`, which the pane functions copy before the user's function
 * sees it (windowed-stream.ts: Flink lets a merge reuse either argument); every first argument is a
 * copy or a merge the sweep made, and a window's merge starts from a copy, so user functions that
 * mutate either argument change neither stored panes nor the sweep's partial merges.
 *
 * Valid while the key's panes do not change: the operator empties a sweep when the key's firings
 * of the watermark advance end (no element arrives during one), and the late-element sweep right
 * after its firings.
 */
import { EddyError } from "../../core/errors.ts";
import { copyValue } from "../../state/copy-value.ts";
import type { InternalValueState } from "../../state/internal-state.ts";

/** What `moveTo` found: the window's first pane, and any of its other panes. */
export const FIRST_PANE = 1;
export const LATER_PANES = 2;

export class PaneSweep {
  readonly #merge: (a: unknown, b: unknown) => unknown;
  /**
   * Loaded pane numbers (consecutive panes: consecutive numbers; the operator's namespaces),
   * increasing, in [0, count); `accs[i]` is pane i's stored accumulator.
   */
  readonly #numbers: number[] = [];
  readonly #accs: unknown[] = [];
  #count = 0;
  /** The range read by `load`: every pane of the key numbered in it is loaded. */
  #loadedTo = Number.NEGATIVE_INFINITY;
  /** The current window's first pane number; windows only move forward. */
  #from = Number.NEGATIVE_INFINITY;
  /** The current window's panes are [lo, hi): the front [lo, mid), the back [mid, hi). */
  #lo = 0;
  #mid = 0;
  #hi = 0;
  /** suffix[i] for lo ≤ i < mid: the merge of panes i … mid - 1 (suffix[mid - 1] is the pane itself). */
  readonly #suffix: unknown[] = [];
  /** The merge of panes mid … hi - 1 when hi > mid (with one pane: the pane itself). */
  #back: unknown = undefined;
  /**
   * The owner's list of panes to delete when it is done with the sweep (the operator: first panes
   * of windows fired without allowed lateness, which no later window contains). Deleted in one go
   * while the key's cells are in the CPU caches, where one deletion per firing, between other
   * keys' firings, took ~4× as long (sliding 10 s / 2 s, 1,000 keys: `removeCell` 621 → 157 ms
   * self time). Emptied by `empty`.
   */
  readonly passedPanes: number[] = [];

  constructor(merge: (a: unknown, b: unknown) => unknown) {
    this.#merge = merge;
  }

  /** Panes held (what `load` read). */
  get count(): number {
    return this.#count;
  }

  /**
   * Reads the current key's panes numbered from `from` to `to` from `panes`, in one pass over the
   * key's cells, and places the window before the first of them.
   */
  load(panes: InternalValueState<unknown>, from: number, to: number): this {
    this.#count = panes.valuesInRange(from, to, 1, this.#numbers, this.#accs);
    this.#loadedTo = to;
    this.#from = from;
    this.#lo = this.#mid = this.#hi = 0;
    this.#back = undefined;
    return this;
  }

  /** Drops what the sweep holds (a pooled or scratch sweep keeps no accumulator alive). */
  empty(): void {
    const accs = this.#accs;
    const suffix = this.#suffix;
    for (let i = 0; i < this.#count; i++) {
      accs[i] = undefined;
      suffix[i] = undefined;
    }
    this.#back = undefined;
    this.#count = 0;
    this.#loadedTo = Number.NEGATIVE_INFINITY;
    this.passedPanes.length = 0;
  }

  /** Whether `to` is within the loaded range (so `moveTo(_, to)` and `holds(to)` may be asked). */
  covers(to: number): boolean {
    return to <= this.#loadedTo;
  }

  /**
   * Makes the window the panes numbered from `from` to `to`, both at or after the current window's;
   * returns FIRST_PANE (it holds pane `from`) | LATER_PANES (it holds others), 0 when it is empty.
   * May call `merge` (user code: the caller reports what it throws).
   */
  moveTo(from: number, to: number): number {
    if (from < this.#from || to > this.#loadedTo) {
      throw new EddyError("INTERNAL", `pane sweep moved back or past what it loaded: [${from}, ${to}] after ${this.#from}, loaded to ${this.#loadedTo}`);
    }
    this.#from = from;
    const numbers = this.#numbers;
    const n = this.#count;
    let lo = this.#lo;
    while (lo < n && numbers[lo]! < from) lo++;
    let hi = this.#hi > lo ? this.#hi : lo;
    while (hi < n && numbers[hi]! <= to) hi++;
    const merge = this.#merge;
    const accs = this.#accs;
    if (lo >= this.#mid) {
      // The front ran out: the window's panes become the front, merged from the last one back.
      const suffix = this.#suffix;
      if (hi > lo) {
        let acc = (suffix[hi - 1] = accs[hi - 1]);
        for (let i = hi - 2; i >= lo; i--) acc = suffix[i] = merge(copyValue(accs[i]), acc);
      }
      this.#mid = hi;
      this.#back = undefined;
    } else {
      // Panes entering go to the back: a copy of the first pane to merge into starts it.
      const mid = this.#mid;
      let back = this.#back;
      for (let i = this.#hi; i < hi; i++) back = i === mid ? accs[i] : merge(i === mid + 1 ? copyValue(back) : back, accs[i]);
      this.#back = back;
    }
    this.#lo = lo;
    this.#hi = hi;
    if (lo === hi) return 0;
    const first = numbers[lo] === from;
    return (first ? FIRST_PANE : 0) | (hi - lo > (first ? 1 : 0) ? LATER_PANES : 0);
  }

  /**
   * The merge of the current window's panes, a value the sweep keeps no reference to (a copy, or
   * what `merge` returned from one); undefined for an empty window. May call `merge`.
   */
  merged(): unknown {
    const lo = this.#lo;
    if (lo === this.#hi) return undefined;
    const front = copyValue(this.#suffix[lo]);
    return this.#mid === this.#hi ? front : this.#merge(front, this.#back);
  }

  /** Whether the key has pane `number`, after the current window's last and within the loaded range. */
  holds(number: number): boolean {
    const numbers = this.#numbers;
    const n = this.#count;
    let i = this.#hi;
    while (i < n && numbers[i]! < number) i++;
    return i < n && numbers[i] === number;
  }
}
