/**
 * The windows of one key for a merging assigner (sessions), and for each the *state window*:
 * the namespace where its contents live. When windows merge, the merged window keeps one of the
 * old state windows, so contents are merged into it instead of being moved (Flink's
 * MergingWindowSet). The set is keyed state (a value per key, stored without copies), so
 * checkpoints capture it; its namespaces are authoritative. The window objects are kept beside
 * them under a symbol key — the decoded form, so the per-element path does not re-parse
 * namespaces — which snapshots do not carry (window classes are not plain data); after a restore
 * they are decoded from the namespaces on first use.
 */
import type { Namespace } from "../../state/namespace.ts";
import type { ValueState } from "../../state/state.ts";
import type { WindowAssigner } from "./assigners.ts";
import type { Window } from "./windows.ts";

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
  readonly #loaded: readonly MergingEntry<W>[];
  #entries: MergingEntry<W>[];

  constructor(assigner: WindowAssigner<unknown, W>, state: ValueState<MergingEntry<W>[]>) {
    this.#assigner = assigner;
    this.#state = state;
    this.#loaded = state.value() ?? [];
    this.#entries = [...this.#loaded];
  }

  #find(window: W): number {
    const ns = this.#assigner.namespaceOf(window);
    for (let i = 0; i < this.#entries.length; i++) if (this.#entries[i]!.ns === ns) return i;
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
    if (i >= 0) this.#entries.splice(i, 1);
  }

  get isEmpty(): boolean {
    return this.#entries.length === 0;
  }

  /**
   * Adds `newWindow`, merging it with the windows it overlaps, and returns the window `newWindow`
   * ended up in. For every merge that changes the set, calls `merge` with the existing windows it
   * absorbed and their state windows. As Flink's MergingWindowSet, `newWindow` is never among the
   * merged windows (it has no state or timers yet), so a window identical to or inside an
   * existing one makes no call at all.
   */
  addWindow(newWindow: W, merge: MergeFunction<W>): W {
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
    }
    return result;
  }

  /** Writes the set back to keyed state if it changed. */
  persist(): void {
    const loaded = this.#loaded;
    const entries = this.#entries;
    if (entries.length === loaded.length && entries.every((e) => loaded.includes(e))) return;
    if (entries.length === 0) this.#state.clear();
    else this.#state.update(entries);
  }
}
