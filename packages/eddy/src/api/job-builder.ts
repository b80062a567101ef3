/**
 * Collects the transformations a job function creates. Internal to the API layer: user code sees
 * the environment and streams, which hold a builder but never expose it.
 */
import type { Transformation } from "../graph/transformation.ts";

export class JobBuilder {
  readonly transformations: Transformation[] = [];
  #nextId = 1;

  nextId(): number {
    return this.#nextId++;
  }

  readonly #inserted = new Map<number, number>();

  /**
   * An id between `after` and `after + 1` for a transformation the API inserts on its own (local
   * window aggregation): it takes no id from the sequence, so the ids of the user's operators, and
   * the operator ids derived from them, are the same with or without it. Later calls with the same
   * `after` give larger ids.
   */
  insertedId(after: number): number {
    const n = (this.#inserted.get(after) ?? 0) + 1;
    this.#inserted.set(after, n);
    return after + n / (n + 1);
  }

  add<T extends Transformation>(t: T): T {
    this.transformations.push(t);
    return t;
  }
}
