/**
 * The task watchdog: finds a task whose call into user code has not returned for a long time (an
 * endless loop, a blocking wait) on a worker thread, so that the job fails naming the task instead
 * of hanging until a checkpoint times out, or forever without checkpoints.
 *
 * Each worker's executor writes, around every task slice and every `open()`, which task it is in
 * (`BusyTaskBoard`, a few words of shared memory: two atomic stores and an atomic add per slice,
 * not per record). The coordinator's `TaskWatchdog` samples the boards: a worker that stays inside
 * the same entry for `timeoutMs` is stuck. A worker thread stuck in JavaScript cannot answer
 * messages, so only the coordinator can see this, and only terminating the thread ends it.
 *
 * Granularity: the entry is a task (an operator chain's subtask), as in Flink's task names; which
 * function of the chain, and where, comes from the thread's stack (threaded-attempt.ts pauses the
 * thread through the inspector to read it).
 */

/** Words of a board: [entries so far, chain index + 1 (0: outside user code), subtask]. */
const BOARD_WORDS = 3;
const SEQ = 0;
const CHAIN = 1;
const SUBTASK = 2;

/** A fresh board for one worker (shared memory; the worker writes, the coordinator reads). */
export function createBusyBoardBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(BOARD_WORDS * Int32Array.BYTES_PER_ELEMENT);
}

/** The worker's side: where its executor is. Never called concurrently (one executor per thread). */
export class BusyTaskBoard {
  readonly #words: Int32Array;

  constructor(buffer: SharedArrayBuffer) {
    this.#words = new Int32Array(buffer);
  }

  /** Entering user code of subtask `subtask` of chain `chain`. */
  enter(chain: number, subtask: number): void {
    Atomics.store(this.#words, SUBTASK, subtask);
    Atomics.store(this.#words, CHAIN, chain + 1);
    // Last: a reader that sees the new entry count sees the task it belongs to.
    Atomics.add(this.#words, SEQ, 1);
  }

  leave(): void {
    Atomics.store(this.#words, CHAIN, 0);
  }
}

/** A task found stuck. */
export interface StuckTask {
  readonly worker: number;
  readonly chain: number;
  readonly subtask: number;
  /** How long it has been in the same entry, at least. */
  readonly forMs: number;
}

/**
 * The coordinator's side. `check(nowMs)` is called periodically (every ~timeoutMs / 10); it
 * reports each stuck entry once. Time is passed in, so tests drive it with any clock.
 */
export class TaskWatchdog {
  readonly #boards: readonly Int32Array[];
  readonly #timeoutMs: number;
  /** Per worker: the entry count last seen and since when (undefined: outside user code). */
  readonly #seen: ({ seq: number; sinceMs: number; reported: boolean } | undefined)[];

  constructor(boards: readonly SharedArrayBuffer[], timeoutMs: number) {
    this.#boards = boards.map((b) => new Int32Array(b));
    this.#timeoutMs = timeoutMs;
    this.#seen = boards.map(() => undefined);
  }

  check(nowMs: number): StuckTask[] {
    const stuck: StuckTask[] = [];
    for (let w = 0; w < this.#boards.length; w++) {
      const words = this.#boards[w]!;
      const chain = Atomics.load(words, CHAIN) - 1;
      const seq = Atomics.load(words, SEQ);
      if (chain < 0) {
        this.#seen[w] = undefined;
        continue;
      }
      const seen = this.#seen[w];
      if (seen === undefined || seen.seq !== seq) {
        this.#seen[w] = { seq, sinceMs: nowMs, reported: false };
        continue;
      }
      const forMs = nowMs - seen.sinceMs;
      if (forMs >= this.#timeoutMs && !seen.reported) {
        seen.reported = true;
        stuck.push({ worker: w, chain, subtask: Atomics.load(words, SUBTASK), forMs });
      }
    }
    return stuck;
  }
}
