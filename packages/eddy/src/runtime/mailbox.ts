/**
 * A task's mailbox (Flink's mailbox model): actions that must run on the task's thread between
 * records — processing-time timers, split assignments, later barriers and async results. Anything
 * asynchronous only posts mail; it never touches operator state directly.
 */
import { RingBuffer } from "../core/ring-buffer.ts";

export class Mailbox {
  readonly #mail = new RingBuffer<() => void>(16);
  readonly #onMail: () => void;

  /** `onMail` wakes the executor when mail arrives (it may be called from any callback). */
  constructor(onMail: () => void) {
    this.#onMail = onMail;
  }

  post(action: () => void): void {
    this.#mail.push(action);
    this.#onMail();
  }

  get hasMail(): boolean {
    return this.#mail.size > 0;
  }

  /** Runs mail until the box is empty, including mail posted by the mail it runs. */
  drain(): void {
    for (let action = this.#mail.shift(); action !== undefined; action = this.#mail.shift()) action();
  }

  clear(): void {
    this.#mail.clear();
  }
}
