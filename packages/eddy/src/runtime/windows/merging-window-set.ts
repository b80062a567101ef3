/**
 * The windows of one key for a merging assigner (sessions), and for each the *state window*:
 * the namespace where its contents live. When windows merge, the merged window keeps one of the
 * old state windows, so contents are merged into it instead of being moved (Flink's
 * MergingWindowSet). The mapping is keyed state (a MapState per key), so checkpoints capture it.
 */
import type { Namespace } from "../../state/heap-keyed-state-backend.ts";
import type { MapState } from "../../state/state.ts";
import type { WindowAssigner } from "./assigners.ts";
import type { Window } from "./windows.ts";

export type MergeFunction<W> = (mergeResult: W, mergedWindows: W[], stateWindowResult: W, mergedStateWindows: W[]) => void;

export class MergingWindowSet<W extends Window> {
  readonly #assigner: WindowAssigner<unknown, W>;
  readonly #state: MapState<string, string>;
  /** window namespace → state window namespace, for the current key. */
  readonly #mapping = new Map<string, string>();
  #dirty = false;

  constructor(assigner: WindowAssigner<unknown, W>, state: MapState<string, string>) {
    this.#assigner = assigner;
    this.#state = state;
    for (const [w, s] of state.entries()) this.#mapping.set(w, s);
  }

  #ns(w: W): string {
    return String(this.#assigner.namespaceOf(w));
  }

  getStateWindow(window: W): W | undefined {
    const s = this.#mapping.get(this.#ns(window));
    return s === undefined ? undefined : this.#assigner.windowOf(s);
  }

  retireWindow(window: W): void {
    if (this.#mapping.delete(this.#ns(window))) this.#dirty = true;
  }

  get isEmpty(): boolean {
    return this.#mapping.size === 0;
  }

  /**
   * Adds `newWindow`, merging it with the windows it overlaps; calls `merge` for every merge with
   * the state windows involved, and returns the window `newWindow` ended up in.
   */
  addWindow(newWindow: W, merge: MergeFunction<W>): W {
    const windows = [...this.#mapping.keys()].map((ns) => this.#assigner.windowOf(ns as Namespace));
    windows.push(newWindow);
    const newNs = this.#ns(newWindow);
    let result = newWindow;
    let mergedNew = false;
    const merges: [W, W[]][] = [];
    this.#assigner.mergeWindows!(windows, (toMerge, merged) => merges.push([merged, toMerge]));
    for (const [mergeResult, mergedWindows] of merges) {
      if (mergedWindows.some((w) => this.#ns(w) === newNs)) {
        mergedNew = true;
        result = mergeResult;
      }
      // The merged window keeps the state window of one of the existing windows.
      let stateWindowNs: string | undefined;
      const mergedStateWindows: W[] = [];
      for (const w of mergedWindows) {
        const s = this.#mapping.get(this.#ns(w));
        if (s === undefined) continue;
        this.#mapping.delete(this.#ns(w));
        if (stateWindowNs === undefined) stateWindowNs = s;
        else mergedStateWindows.push(this.#assigner.windowOf(s));
      }
      if (stateWindowNs === undefined) continue; // cannot happen: a merge involves an existing window
      this.#mapping.set(this.#ns(mergeResult), stateWindowNs);
      this.#dirty = true;
      const onlySelf = mergedWindows.length === 1 && this.#ns(mergedWindows[0]!) === this.#ns(mergeResult);
      if (!onlySelf) merge(mergeResult, mergedWindows, this.#assigner.windowOf(stateWindowNs), mergedStateWindows);
    }
    if (!mergedNew && !this.#mapping.has(newNs)) {
      this.#mapping.set(newNs, newNs);
      this.#dirty = true;
    }
    return result;
  }

  /** Writes the mapping back to keyed state if it changed. */
  persist(): void {
    if (!this.#dirty) return;
    this.#state.clear();
    if (this.#mapping.size > 0) this.#state.putAll(this.#mapping);
    this.#dirty = false;
  }
}
