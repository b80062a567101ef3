/**
 * Asynchronous work that the operators of one task started: a sink's write that took the record
 * but asks to wait, its flush at the end of input, its commits. The task loop never awaits
 * anything; instead, while work is pending:
 *
 * - `blocking` work (a write or a flush): the task reads no more input — backpressure reaches the
 *   source through the channels' credit, as when an output channel is full — and does not finish;
 * - `background` work (a commit): the task goes on reading, but does not end (its executor waits
 *   for it before closing the task), so a job never ends before its last commit.
 *
 * Either way timers and mail still run. When work settles the executor is woken; a rejection fails
 * the task on its own thread (as mail that throws), with the error the work rejected with.
 */
export class PendingWork {
  /** Work that holds back input; read on the per-record path (a field, not a getter). */
  blocking = 0;
  #background = 0;
  readonly #wake: () => void;
  readonly #fail: (error: unknown) => void;

  constructor(wake: () => void, fail: (error: unknown) => void) {
    this.#wake = wake;
    this.#fail = fail;
  }

  /** Tracks `work` until it settles. */
  add(work: PromiseLike<unknown>, kind: "blocking" | "background"): void {
    if (kind === "blocking") this.blocking++;
    else this.#background++;
    const settled = (): void => {
      if (kind === "blocking") this.blocking--;
      else this.#background--;
    };
    work.then(
      () => {
        settled();
        this.#wake();
      },
      (e: unknown) => {
        settled();
        this.#fail(e);
      },
    );
  }

  /** Whether any work is pending (the task may not end yet). */
  get any(): boolean {
    return this.blocking > 0 || this.#background > 0;
  }
}

/** Whether `value` is a promise (or any thenable): what a writer returns to ask the task to wait. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function";
}
