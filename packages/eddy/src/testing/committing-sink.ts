/**
 * A two-phase test sink: records are staged per subtask and become visible under `name` only
 * when the checkpoint that holds them completes (or at the end of input) — so what
 * `handle.collected(name)` shows is the committed output, which exactly-once tests compare with a
 * failure-free run. Each commit carries a transaction id, and the job applies each id once, so the
 * commits repeated after a restore have no effect.
 */
import { randomUUID } from "node:crypto";
import type { Sink } from "../connector/sink.ts";

interface Staged {
  readonly txnId: string;
  readonly values: readonly unknown[];
}

export function committingCollectSink<T>(name: string): Sink<T> {
  if (typeof name !== "string" || name.length === 0) throw new TypeError("committingCollectSink needs a name");
  return {
    createWriter: (context) => {
      // Transaction ids are unique across restarts: a writer instance never reuses one.
      const writerId = randomUUID();
      let sequence = 0;
      let staged: unknown[] = [];
      return {
        write(value) {
          staged.push(value);
        },
        prepareCommit() {
          if (staged.length === 0) return [];
          const txn: Staged = { txnId: `${context.subtaskIndex}-${writerId}-${sequence++}`, values: staged };
          staged = [];
          return [txn];
        },
      };
    },
    createCommitter: (context) => ({
      commit(committables) {
        for (const c of committables as Staged[]) context.job.commitOnce(name, c.txnId, c.values);
      },
    }),
  };
}
