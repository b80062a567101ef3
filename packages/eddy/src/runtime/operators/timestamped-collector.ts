import type { Collector } from "../functions.ts";
import type { Output } from "../operator.ts";

/**
 * The collector handed to user functions: emits with the timestamp of the record (or timer)
 * being processed. One instance per operator, reused for every record; `timestamp` is set by
 * the operator before each user call.
 */
export class TimestampedCollector<T> implements Collector<T> {
  readonly #output: Output<T>;
  timestamp = Number.NaN;

  constructor(output: Output<T>) {
    this.#output = output;
  }

  collect(value: T): void {
    this.#output.collect(value, this.timestamp);
  }
}
