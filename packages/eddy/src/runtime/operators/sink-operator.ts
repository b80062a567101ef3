/**
 * Runs a sink writer as the last operator of a chain. A two-phase sink (one with a committer)
 * keeps the committables of every checkpoint not yet complete as operator state; it commits them
 * when the checkpoint completes, and commits restored ones again after a restore (they belong to
 * the completed checkpoint it restores from). What it writes after the last barrier is committed
 * by the job's final checkpoint, taken when every task has finished; without checkpointing it is
 * committed at the end of input.
 */
import { userFunctionError } from "../../core/errors.ts";
import { hasTimestamp } from "../../core/time.ts";
import type { Committer, Sink, SinkContext, SinkWriter } from "../../connector/sink.ts";
import type { OneInputOperator, OperatorContext } from "../operator.ts";

/** Operator state name of a two-phase sink's pending committables. */
export const PENDING_COMMITTABLES_STATE = "pending-committables";

/** Committables of one checkpoint, as held in the sink's operator state. */
interface Pending {
  readonly checkpointId: number;
  readonly committables: readonly unknown[];
}

export function sinkOperator<T>(sink: Sink<T>) {
  return (ctx: OperatorContext): OneInputOperator<T> => {
    let writer: SinkWriter<T> | undefined;
    let committer: Committer<unknown> | undefined;
    /** Pre-committed, not committed yet; ascending checkpoint ids. */
    let pending: Pending[] = [];
    const call = <R>(f: () => R): R => {
      try {
        return f();
      } catch (e) {
        throw userFunctionError(ctx.operatorName, ctx.subtaskIndex, e);
      }
    };
    const sinkContext: SinkContext = {
      subtaskIndex: ctx.subtaskIndex,
      parallelism: ctx.parallelism,
      operatorName: ctx.operatorName,
      job: ctx.job,
    };
    const commitUpTo = (checkpointId: number): void => {
      const due = pending.filter((p) => p.checkpointId <= checkpointId);
      if (due.length === 0) return;
      pending = pending.filter((p) => p.checkpointId > checkpointId);
      const all = due.flatMap((p) => p.committables);
      if (all.length > 0) call(() => committer!.commit(all));
    };
    const checkpointing = ctx.checkpointing;
    const twoPhase = sink.createCommitter !== undefined;
    let restored: readonly unknown[] | undefined;
    if (twoPhase && checkpointing !== undefined) {
      restored = checkpointing.registerOperatorState(PENDING_COMMITTABLES_STATE, "split", (checkpointId) => {
        const committables = call(() => writer?.prepareCommit?.() ?? []);
        if (committables.length > 0) pending.push({ checkpointId, committables });
        return pending.slice();
      });
      checkpointing.addListener({ notifyCheckpointComplete: commitUpTo });
    }
    return {
      open() {
        writer = call(() => sink.createWriter(sinkContext));
        if (twoPhase) committer = call(() => sink.createCommitter!(sinkContext));
        // Restored committables belong to the checkpoint the job restarts from, which completed.
        if (restored !== undefined) {
          pending = (restored as Pending[]).slice();
          commitUpTo(Number.POSITIVE_INFINITY);
        }
      },
      processElement(value, timestamp) {
        try {
          writer!.write(value, hasTimestamp(timestamp) ? timestamp : undefined);
        } catch (e) {
          throw userFunctionError(ctx.operatorName, ctx.subtaskIndex, e);
        }
      },
      processWatermark() {},
      processWatermarkStatus() {},
      endInput() {
        call(() => writer?.flush?.(true));
        // With checkpointing, what is left is committed by the job's final checkpoint.
        if (!twoPhase || checkpointing !== undefined) return;
        const last = call(() => writer?.prepareCommit?.() ?? []);
        if (last.length > 0) pending.push({ checkpointId: Number.POSITIVE_INFINITY, committables: last });
        commitUpTo(Number.POSITIVE_INFINITY);
      },
      close() {
        const w = writer;
        writer = undefined;
        if (w !== undefined) call(() => w.close?.());
      },
    };
  };
}
