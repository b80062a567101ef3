/**
 * The windows of one key for a merging assigner (sessions), and for each the *state window*:
 * the namespace where its contents live. When windows merge, the merged window keeps one of the
 * old state windows, so contents are merged into it instead of being moved (Flink's
 * MergingWindowSet). The set is keyed state (a value per key, stored without copies), so
 * checkpoints capture it; its namespaces are authoritative, the window objects beside them are
 * the decoded form kept so the per-element path does not re-parse namespaces.
 */
import type { Namespace } from "../../state/heap-keyed-state-backend.ts";
import type { ValueState } from "../../state/state.ts";
import type { WindowAssigner } from "./assigners.ts";
import type { Window } from "./windows.ts";

export interface MergingEntry<W> {
  readonly ns: Namespace;
  readonly stateNs: Namespace;
  readonly window: W;
  readonly stateWindow: W;
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
    return i < 0 ? undefined : this.#entries[i]!.stateWindow;
  }

  retireWindow(window: W): void {
    const i = this.#find(window);
    if (i >= 0) this.#entries.splice(i, 1);
  }

  get isEmpty(): boolean {
    return this.#entries.length === 0;
  }

  /**
   * Adds `newWindow`, merging it with the windows it overlaps; calls `merge` for every merge with
   * the state windows involved, and returns the window `newWindow` ended up in.
   */
  addWindow(newWindow: W, merge: MergeFunction<W>): W {
    const entryOf = new Map<W, MergingEntry<W>>();
    const windows: W[] = [];
    for (const e of this.#entries) {
      entryOf.set(e.window, e);
      windows.push(e.window);
    }
    windows.push(newWindow);
    let result = newWindow;
    let mergedNew = false;
    const merges: [W, W[]][] = [];
    this.#assigner.mergeWindows!(windows, (toMerge, merged) => merges.push([merged, toMerge]));
    for (const [mergeResult, mergedWindows] of merges) {
      if (mergedWindows.includes(newWindow)) {
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
        else mergedStateWindows.push(e.stateWindow);
      }
      if (kept === undefined) continue; // cannot happen: a merge involves an existing window
      const ns = this.#assigner.namespaceOf(mergeResult);
      this.#entries.push(ns === kept.ns ? kept : { ns, stateNs: kept.stateNs, window: mergeResult, stateWindow: kept.stateWindow });
      const onlySelf = mergedWindows.length === 1 && mergedWindows[0]!.equals(mergeResult);
      if (!onlySelf) merge(mergeResult, mergedWindows, kept.stateWindow, mergedStateWindows);
    }
    if (!mergedNew && this.#find(newWindow) < 0) {
      const ns = this.#assigner.namespaceOf(newWindow);
      this.#entries.push({ ns, stateNs: ns, window: newWindow, stateWindow: newWindow });
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
