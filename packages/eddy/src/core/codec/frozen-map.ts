/**
 * A Map's entries as they were at one moment, as two arrays: what a snapshot keeps of a map
 * state's cell that the task goes on changing (state/state-table.ts: the live entry keeps the Map
 * itself, the captured one gets this). Freezing reads the Map once (~20-40 ns per entry); the
 * copy of the Map it replaces rehashed every key into a new Map (~160 ns per entry, measured on
 * 3.8 M int entries), and q16's checkpoints copied most of its state that way.
 *
 * The default codec writes a FrozenMap exactly as the Map it was (its maps group), so snapshots
 * encode it without thawing; anything else asks for `toMap()`.
 */
export class FrozenMap {
  readonly keys: unknown[];
  readonly values: unknown[];

  constructor(map: ReadonlyMap<unknown, unknown>) {
    const n = map.size;
    const keys = new Array<unknown>(n);
    const values = new Array<unknown>(n);
    let i = 0;
    for (const [k, v] of map) {
      keys[i] = k;
      values[i++] = v;
    }
    this.keys = keys;
    this.values = values;
  }

  get size(): number {
    return this.keys.length;
  }

  /** A Map of the frozen entries, in their order. */
  toMap(): Map<unknown, unknown> {
    const map = new Map<unknown, unknown>();
    for (let i = 0; i < this.keys.length; i++) map.set(this.keys[i], this.values[i]);
    return map;
  }
}
