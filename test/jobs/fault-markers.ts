/**
 * Injected faults that fire once per marker file, however many times a job restarts and on
 * whichever worker: the marker is created exclusively when the fault fires. Shared by the jobs of
 * the kill-and-compare tests (checkpointed.ts, dead-letters.ts).
 */
import { writeFileSync } from "node:fs";
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
    createWriter: (context) => inner.createWriter(context),
    createCommitter(context) {
      const committer = inner.createCommitter!(context);
      let commits = 0;
      return {
        async commit(committables) {
          await committer.commit(committables);
          if (++commits >= afterCommits) writeFileSync(marker, "committed");
        },
      };
    },
  };
}
