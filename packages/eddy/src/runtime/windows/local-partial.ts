/** What local window aggregation (local-window-aggregation.ts) sends across the keyBy. */
import type { Key } from "../../core/key.ts";

/** A key and its partial accumulator (or partially reduced value) for one bucket. */
export interface LocalPartial {
  readonly k: Key;
  a: unknown;
  /** How many elements it holds (a late partial counts as that many late records dropped). */
  n: number;
}

/** A partial session of local aggregation: also its window's bounds [s, e). */
export interface SessionPartial extends LocalPartial {
  s: number;
  e: number;
}

/** The key of a partial: the keyed side's key selector. */
export const partialKey = (partial: LocalPartial): Key => partial.k;
