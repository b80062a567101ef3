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

  add<T extends Transformation>(t: T): T {
    this.transformations.push(t);
    return t;
  }
}
