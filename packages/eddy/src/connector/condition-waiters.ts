/**
 * Promises that resolve once a condition holds, re-checked whenever `notify()` is called (a
 * request settled, a buffer shrank), and reject as soon as the owner has failed: how the
 * asynchronous sink writers hold back the task (backpressure) and wait for acknowledgements.
 * Never called concurrently; the owner calls `notify()` after every change a condition may read.
 */
export class ConditionWaiters {
  readonly #failure: () => unknown;
  #waiters: (() => void)[] = [];

  /** `failure()` is the owner's failure (undefined while there is none). */
  constructor(failure: () => unknown) {
    this.#failure = failure;
  }

  /** Resolves when `ready()` holds, rejects when the owner fails first. */
  until(ready: () => boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const failure = this.#failure();
        if (failure !== undefined) reject(failure);
        else if (ready()) resolve();
        else this.#waiters.push(check);
      };
      check();
    });
  }

  /** Checks every waiting condition again. */
  notify(): void {
    if (this.#waiters.length === 0) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}
