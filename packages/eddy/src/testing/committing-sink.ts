/**
 * Two-phase test sinks: records are staged per subtask and become visible only when the
 * checkpoint that holds them completes (or with the job's final checkpoint) — so what a test
 * reads is the committed output, which exactly-once tests compare with a failure-free run. Each
 * commit is a transaction with an id that is never reused, across restarts too; committing one
 * again after a restore must have no further effect, which each committer ensures its own way.
 */
import { randomUUID } from "node:crypto";
import type { Sink, SinkContext } from "../connector/sink.ts";

/** Records staged by one writer between two barriers. */
export interface StagedTransaction<T> {
  readonly txnId: string;
  readonly values: readonly T[];
}

/**
 * A two-phase sink whose committer hands each transaction to `commit` (which must be idempotent;
 * it may return a promise: transactions are committed one after another).
 */
export function twoPhaseTestSink<T>(commit: (context: SinkContext, txn: StagedTransaction<T>) => void | PromiseLike<void>): Sink<T> {
  return {
    createWriter: (context) => {
      // Transaction ids are unique across restarts: a writer instance never reuses one.
      const writerId = randomUUID();
      let sequence = 0;
      let staged: T[] = [];
      return {
        write(value) {
          staged.push(value);
        },
        prepareCommit() {
          if (staged.length === 0) return [];
          const txn: StagedTransaction<T> = { txnId: `${context.subtaskIndex}-${writerId}-${sequence++}`, values: staged };
          staged = [];
          return [txn];
        },
      };
    },
    createCommitter: (context) => ({
      async commit(committables) {
        for (const txn of committables as StagedTransaction<T>[]) await commit(context, txn);
      },
    }),
  };
}

/**
 * Committed records appear under `name` in `handle.collected(name)`; the job applies each
 * transaction id once (JobServices.commitOnce).
 */
export function committingCollectSink<T>(name: string): Sink<T> {
  if (typeof name !== "string" || name.length === 0) throw new TypeError("committingCollectSink needs a name");
  return twoPhaseTestSink<T>((context, txn) => context.job.commitOnce(name, txn.txnId, txn.values));
}
