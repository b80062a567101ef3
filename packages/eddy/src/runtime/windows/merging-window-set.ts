/**
 * The windows of one key for a merging assigner (sessions), and for each the *state window*:
 * the namespace where its contents live. When windows merge, the merged window keeps one of the
 * old state windows, so contents are merged into it instead of being moved (Flink's
 * MergingWindowSet). The set is keyed state (a value per key, stored without copies), so
 * checkpoints capture it; its namespaces are authoritative. The window objects are kept beside
 * them under a symbol key — the decoded form, so the per-element path does not re-parse
 * namespaces — which snapshots do not carry (window classes are not plain data); after a restore
 * they are decoded from the namespaces on first use.
 *
 * One instance per operator, bound to the current key's set by `load()`. The set is the stored
 * array itself, changed in place (the state is declared `copy: "none"`, so a live snapshot
 * capture gets its own copy of the entry before the first access changes it), and written back
 * by `persist()` only when it changed: an element inside an existing session costs no state write
 * and no copy. (Flink rebuilds the set from list state for every element.)
 *
 * Session assigners (`WindowAssigner.mergesIntersecting`) merge a new window with exactly the existing windows
 * it intersects, into their cover: the existing windows never intersect each other (every add
 * merges what it touches), so one scan finds the same merge as Flink's sort-and-sweep over all
 * windows, without sorting or callbacks. Other merging assigners go through `mergeWindows`.
 */
import type { Namespace } from "../../state/namespace.ts";
import type { ValueState } from "../../state/state.ts";
import type { WindowAssigner } from "./assigners.ts";
import type { TimeWindow, Window } from "./windows.ts";

const DECODED: unique symbol = Symbol("decoded windows");

export interface MergingEntry<W> {
  readonly ns: Namespace;
  readonly stateNs: Namespace;
  /** The windows of `ns` and `stateNs`; absent after a restore until first used. */
  [DECODED]?: { readonly window: W; readonly stateWindow: W };
}

function entry<W>(ns: Namespace, stateNs: Namespace, window: W, stateWindow: W): MergingEntry<W> {
  return { ns, stateNs, [DECODED]: { window, stateWindow } };
}

export type MergeFunction<W> = (mergeResult: W, mergedWindows: W[], stateWindowResult: W, mergedStateWindows: W[]) => void;

export class MergingWindowSet<W extends Window> {
  readonly #assigner: WindowAssigner<unknown, W>;
  readonly #state: ValueState<MergingEntry<W>[]>;
  readonly #intersecting: boolean;
  /** The current key's entries (the stored array, or a new one when the key had none). */
  #entries: MergingEntry<W>[] = [];
  /** Whether `#entries` changed since `load()` (persist writes it back). */
  #changed = false;
  /** The state window of the window the last `addWindow` returned (saves the operator a lookup). */
  lastStateWindow: W | undefined = undefined;

  constructor(assigner: WindowAssigner<unknown, W>, state: ValueState<MergingEntry<W>[]>) {
    this.#assigner = assigner;
    this.#state = state;
    this.#intersecting = assigner.mergesIntersecting === true;
  }

  /** Binds the set to the current key's windows; call after every change of the current key. */
  load(): void {
    this.#entries = this.#state.value() ?? [];
    this.#changed = false;
  }

  #find(window: W): number {
    const ns = this.#assigner.namespaceOf(window);
    const entries = this.#entries;
    for (let i = 0; i < entries.length; i++) if (entries[i]!.ns === ns) return i;
    return -1;
  }

  getStateWindow(window: W): W | undefined {
    const i = this.#find(window);
    return i < 0 ? undefined : this.#decoded(this.#entries[i]!).stateWindow;
  }

  #decoded(e: MergingEntry<W>): { readonly window: W; readonly stateWindow: W } {
    return (e[DECODED] ??= { window: this.#assigner.windowOf(e.ns), stateWindow: this.#assigner.windowOf(e.stateNs) });
  }

  retireWindow(window: W): void {
    const i = this.#find(window);
    if (i < 0) return;
    this.#entries.splice(i, 1);
    this.#changed = true;
  }

  get isEmpty(): boolean {
    return this.#entries.length === 0;
  }

  /**
   * Adds `newWindow`, merging it with the windows it overlaps, and returns the window `newWindow`
   * ended up in. For every merge that changes the set, calls `merge` with the existing windows it
   * absorbed (in start order) and their state windows. As Flink's MergingWindowSet, `newWindow`
   * is never among the merged windows (it has no state or timers yet), so a window identical to
   * or inside an existing one makes no call at all.
   */
  addWindow(newWindow: W, merge: MergeFunction<W>): W {
    if (this.#intersecting) return this.#addIntersecting(newWindow, merge);
    const result = this.#addByAssigner(newWindow, merge);
    this.lastStateWindow = this.getStateWindow(result);
    return result;
  }

  /** hot path (sessions): see the file comment. */
  #addIntersecting(newWindow: W, merge: MergeFunction<W>): W {
    const entries = this.#entries;
    const added = newWindow as unknown as TimeWindow;
    let first = -1;
    let count = 0;
    for (let i = 0; i < entries.length; i++) {
      if ((this.#decoded(entries[i]!).window as unknown as TimeWindow).intersects(added)) {
        if (first < 0) first = i;
        count++;
      }
    }
    if (count === 0) {
      const ns = this.#assigner.namespaceOf(newWindow);
      entries.push(entry(ns, ns, newWindow, newWindow));
      this.#changed = true;
      this.lastStateWindow = newWindow;
      return newWindow;
    }
    if (count === 1) {
      const e = entries[first]!;
      const { window, stateWindow } = this.#decoded(e);
      this.lastStateWindow = stateWindow;
      const w = window as unknown as TimeWindow;
      if (w.start <= added.start && w.end >= added.end) return window; // inside an existing session
      const result = w.cover(added) as unknown as W;
      // In place: the set is unordered (the multi-window merge sorts what it absorbs by start).
      entries[first] = entry(this.#assigner.namespaceOf(result), e.stateNs, result, stateWindow);
      this.#changed = true;
      merge(result, [window], stateWindow, []);
      return result;
    }
    // The new window bridges several sessions: they merge in start order, the first keeps its state window.
    const absorbed: MergingEntry<W>[] = [];
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      if ((this.#decoded(e).window as unknown as TimeWindow).intersects(added)) {
        absorbed.push(e);
        entries.splice(i--, 1);
      }
    }
    absorbed.sort((a, b) => (this.#decoded(a).window as unknown as TimeWindow).start - (this.#decoded(b).window as unknown as TimeWindow).start);
    let cover = added;
    const mergedWindows: W[] = [];
    const mergedStateWindows: W[] = [];
    for (const e of absorbed) {
      const { window, stateWindow } = this.#decoded(e);
      cover = cover.cover(window as unknown as TimeWindow);
      mergedWindows.push(window);
      if (e !== absorbed[0]) mergedStateWindows.push(stateWindow);
    }
    const kept = absorbed[0]!;
    const result = cover as unknown as W;
    this.lastStateWindow = this.#decoded(kept).stateWindow;
    entries.push(entry(this.#assigner.namespaceOf(result), kept.stateNs, result, this.lastStateWindow));
    this.#changed = true;
    merge(result, mergedWindows, this.lastStateWindow, mergedStateWindows);
    return result;
  }

  /** Any merging assigner: its `mergeWindows` over the existing windows and the new one. */
  #addByAssigner(newWindow: W, merge: MergeFunction<W>): W {
    const entryOf = new Map<W, MergingEntry<W>>();
    const windows: W[] = [];
    for (const e of this.#entries) {
      const { window } = this.#decoded(e);
      entryOf.set(window, e);
      windows.push(window);
    }
    windows.push(newWindow);
    let result = newWindow;
    let mergedNew = false;
    const merges: [W, W[]][] = [];
    this.#assigner.mergeWindows!(windows, (toMerge, merged) => merges.push([merged, toMerge]));
    for (const [mergeResult, mergedWindows] of merges) {
      // By identity: an existing window equal to newWindow stays, with its entry.
      const self = mergedWindows.indexOf(newWindow);
      if (self >= 0) {
        mergedWindows.splice(self, 1);
        mergedNew = true;
        result = mergeResult;
      }
      // The merged window keeps the state window of one of the existing windows.
      let kept: MergingEntry<W> | undefined;
      const mergedStateWindows: W[] = [];
      for (const w of mergedWindows) {
        const e = entryOf.get(w);
        if (e === undefined) continue;
        this.#entries.splice(this.#entries.indexOf(e), 1);
        this.#changed = true;
        if (kept === undefined) kept = e;
        else mergedStateWindows.push(this.#decoded(e).stateWindow);
      }
      if (kept === undefined) continue; // cannot happen: a merge involves an existing window
      const ns = this.#assigner.namespaceOf(mergeResult);
      const keptStateWindow = this.#decoded(kept).stateWindow;
      this.#entries.push(ns === kept.ns ? kept : entry(ns, kept.stateNs, mergeResult, keptStateWindow));
      // One existing window that already covers newWindow: nothing merges.
      const unchanged = mergedWindows.length === 1 && mergedWindows[0]!.equals(mergeResult);
      if (!unchanged) merge(mergeResult, mergedWindows, keptStateWindow, mergedStateWindows);
    }
    if (!mergedNew && this.#find(newWindow) < 0) {
      const ns = this.#assigner.namespaceOf(newWindow);
      this.#entries.push(entry(ns, ns, newWindow, newWindow));
      this.#changed = true;
    }
    return result;
  }

  /** Writes the set back to keyed state if it changed since `load()`. */
  persist(): void {
    if (!this.#changed) return;
    this.#changed = false;
    if (this.#entries.length === 0) this.#state.clear();
    else this.#state.update(this.#entries);
  }
}
