import type { Collector } from "../functions.ts";
import type { Output } from "../operator.ts";

/**
 * The collector handed to user functions: emits with the timestamp of the record (or timer)
 * being processed. One instance per operator, reused for every record; `timestamp` is set by
 * the operator before each user call.
 *
 * With `onCollectAfterReturn`, the operator also sets `open` around each user call, and a collect
 * while it is false (from a callback or after an `await`) is not emitted but reported.
 */
export class TimestampedCollector<T> implements Collector<T> {
  readonly #output: Output<T>;
  readonly #onCollectAfterReturn: (() => void) | undefined;
  timestamp = Number.NaN;
  /** Whether a user call is running; stays true unless the operator tracks its calls. */
  open = true;

  constructor(output: Output<T>, onCollectAfterReturn?: () => void) {
    this.#output = output;
    this.#onCollectAfterReturn = onCollectAfterReturn;
    if (onCollectAfterReturn !== undefined) this.open = false;
  }

  collect(value: T): void {
    if (this.open) this.#output.collect(value, this.timestamp);
    else this.#onCollectAfterReturn!();
  }
}
