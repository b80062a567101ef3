/**
 * How worker threads wake each other when they exchange frames through shared memory. Publishing
 * a frame, credit or room in a ring sends no event, and a worker whose task loop has nothing to do
 * sleeps until an event arrives. So each worker has a flag in one shared Int32Array: it sets the
 * flag before it sleeps (see `Doorbell` in task-executor.ts), and a peer that has just published
 * something for it checks the flag; only if it is set does the peer clear it and post a tiny
 * message. A busy worker is never sent a message: it finds new frames on its next round.
 */
import type { MessagePort } from "node:worker_threads";
import type { Doorbell } from "./task-executor.ts";

/** The message a doorbell posts; the receiver only wakes its executor. */
export const DOORBELL_MESSAGE = 0;

/** The shared flags of `workers` workers (allocate once, give every worker the same buffer). */
export function createDoorbells(workers: number): SharedArrayBuffer {
  return new SharedArrayBuffer(4 * workers);
}

export class Doorbells implements Doorbell {
  /** asleep[w] is 1 while worker w's executor is (about to be) asleep and wants to be woken. */
  readonly #asleep: Int32Array;
  readonly #self: number;
  /** ports[w] reaches worker w (undefined for this worker). */
  readonly #ports: readonly (MessagePort | undefined)[];

  constructor(shared: SharedArrayBuffer, self: number, ports: readonly (MessagePort | undefined)[]) {
    this.#asleep = new Int32Array(shared);
    this.#self = self;
    this.#ports = ports;
  }

  arm(): void {
    Atomics.store(this.#asleep, this.#self, 1);
  }

  disarm(): void {
    Atomics.store(this.#asleep, this.#self, 0);
  }

  /** Wakes `worker` if it sleeps; call after publishing something it reads. Cheap when it does not. */
  ring(worker: number): void {
    if (Atomics.load(this.#asleep, worker) === 0) return;
    if (Atomics.exchange(this.#asleep, worker, 0) === 0) return;
    this.#ports[worker]?.postMessage(DOORBELL_MESSAGE);
  }
}
