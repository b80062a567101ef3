/**
 * Injected faults that fire once per marker file, however many times a job restarts and on
 * whichever worker: the marker is created exclusively when the fault fires. Shared by the jobs of
 * the kill-and-compare tests (checkpointed.ts, dead-letters.ts, file-sink.ts, postgres-sink.ts).
 */
import { existsSync, writeFileSync } from "node:fs";
import type { Sink } from "eddy";

/** True for the single caller that created `marker` (the fault fires); false once it exists. */
export function fireOnce(marker: string): boolean {
  try {
    writeFileSync(marker, "fired", { flag: "wx" });
    return true;
  } catch {
    return false;
  }
}

/**
 * `inner`, creating the file `marker` when it first commits (a checkpoint completed), or, with
 * `afterCommits` n, when one of its committers has committed n times (n checkpoints completed).
 */
export function markingFirstCommit<T>(inner: Sink<T>, marker: string | undefined, afterCommits = 1): Sink<T> {
  if (marker === undefined) return inner;
  return {
    ...inner,
    createWriter: (context) => inner.createWriter(context),
    createCommitter(context) {
      const committer = inner.createCommitter!(context);
      let commits = 0;
      return {
        async commit(committables) {
          await committer.commit(committables);
          if (++commits >= afterCommits) writeFileSync(marker, "committed");
        },
        close: () => committer.close?.(),
      };
    },
  };
}

/** A fault at one record of a numbered input: a worker exit (status 3) or an exception. */
export interface RecordFault {
  readonly kind: "process" | "exit";
  readonly atRecord: number;
  readonly marker: string;
}

/** For short sleeps (Atomics.wait on a value that never changes). */
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * The identity on the numbers 1..n, as a map function: with `fault`, it fires once at
 * `fault.atRecord`; with `hold`, it runs slowly (1 ms every `holdEvery` records) until the file
 * `hold` exists (a test kills the job meanwhile, then creates the file before resuming).
 */
export function faultyIdentity(fault: RecordFault | undefined, hold: string | undefined, holdEvery: number): (n: number) => number {
  let released = hold === undefined;
  return (n) => {
    if (!released && n % holdEvery === 0) {
      released = existsSync(hold!);
      if (!released) Atomics.wait(sleeper, 0, 0, 1);
    }
    if (fault !== undefined && n === fault.atRecord && fireOnce(fault.marker)) {
      if (fault.kind === "exit") process.exit(3);
      throw new Error(`injected fault at record ${n}`);
    }
    return n;
  };
}

/** The fault an environment variable holds as JSON (unset or empty: none). */
export const recordFaultFrom = (raw: string | undefined): RecordFault | undefined => (raw === undefined || raw === "" ? undefined : (JSON.parse(raw) as RecordFault));
