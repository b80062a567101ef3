/**
 * Runs a sink writer as the last operator of a chain. A two-phase sink (one with a committer)
 * keeps the committables of every checkpoint not yet committed as operator state; it commits them
 * when the checkpoint completes, and commits restored ones again after a restore (they belong to
 * the completed checkpoint it restores from). At another parallelism restored committables are
 * dealt round robin, or, when the sink names each committable's owner (Sink.committableOwner), all
 * of an owner's go to subtask `owner % parallelism` (union state, filtered here) in checkpoint
 * order. What it writes after the last barrier is committed by the job's final checkpoint, taken
 * when every task has finished; without checkpointing it is committed at the end of input.
 *
 * Asynchronous writers and committers (connector/sink.ts) never make the task wait on the thread:
 * a write's promise and the final flush are blocking work (OperatorContext.awaitWork: no input,
 * no end until they settle), committables given as a promise are awaited by the checkpoint's
 * asynchronous part, and commits are background work, one at a time in checkpoint order, retried
 * with backoff. Committables leave the operator's state only once their commit succeeded, so a
 * checkpoint taken while a commit is in flight still holds them.
 *
 * The task stops reading at the next element, not at the next record: the rest of a batch (or of
 * a source's poll) still arrives while a write's promise is pending. Those records wait here, in
 * order, and are written one at a time as promises resolve, so the writer is never called while
 * a promise of its own is pending. Whatever else calls the writer — prepareCommit and
 * snapshotState at a barrier (a source's barrier comes as mail, which runs while input waits), the
 * final flush — runs after them: records read before a barrier belong to its checkpoint.
 */
import { describeCause, EddyError, userFunctionError } from "../../core/errors.ts";
import { hasTimestamp, NO_TIMESTAMP } from "../../core/time.ts";
import { DEFAULT_COMMIT_RETRY, type Committer, type Sink, type SinkContext, type SinkWriter } from "../../connector/sink.ts";
import { SINK_RECORDS_WRITTEN, type OneInputOperator, type OperatorContext, type Output } from "../operator.ts";
import { recordErrorPolicy } from "../record-error-policy.ts";
import { isThenable } from "../pending-work.ts";

/** Operator state name of a two-phase sink's pending committables. */
export const PENDING_COMMITTABLES_STATE = "pending-committables";
/** Operator state name of what a sink writer records itself (SinkWriter.snapshotState). */
export const SINK_WRITER_STATE = "sink-writer-state";

/** Committables of one checkpoint, as held in the sink's operator state. */
interface Pending {
  readonly checkpointId: number;
  readonly committables: readonly unknown[];
}

/** While the committables of a checkpoint may still be on their way (a promise from prepareCommit). */
interface PendingEntry {
  readonly checkpointId: number;
  readonly committables: readonly unknown[] | PromiseLike<readonly unknown[]>;
}

/** The committables `mine` keeps of all restored ones (union state), merged by checkpoint, ascending. */
function ownCommittables(all: readonly Pending[], mine: (committable: unknown) => boolean): PendingEntry[] {
  const byCheckpoint = new Map<number, unknown[]>();
  for (const p of all) {
    const kept = p.committables.filter(mine);
    if (kept.length === 0) continue;
    const list = byCheckpoint.get(p.checkpointId);
    if (list === undefined) byCheckpoint.set(p.checkpointId, kept);
    else list.push(...kept);
  }
  return [...byCheckpoint].sort((a, b) => a[0] - b[0]).map(([checkpointId, committables]) => ({ checkpointId, committables }));
}

export function sinkOperator<T>(sink: Sink<T>) {
  return (ctx: OperatorContext, output: Output<unknown>): OneInputOperator<T> => {
    let writer: SinkWriter<T> | undefined;
    let committer: Committer<unknown> | undefined;
    /** Until close: the committer is closed once (a commit still retrying after that fails). */
    let committerOpen = true;
    /** Pre-committed, not committed yet; ascending checkpoint ids. */
    let pending: PendingEntry[] = [];
    /** The last commit started: commits never overlap, each starts once the one before succeeded. */
    let committing: Promise<void> = Promise.resolve();
    /** Records that arrived while a write's promise was pending, written in order once it resolves. */
    const waiting: { value: T; timestamp: number | undefined }[] = [];
    /** Settles once `waiting` is written and no write's promise is pending; undefined: none is. */
    let writing: Promise<void> | undefined;
    const failure = (e: unknown): EddyError => userFunctionError(ctx, e);
    const written = ctx.counter(SINK_RECORDS_WRITTEN);
    const call = <R>(f: () => R): R => {
      try {
        return f();
      } catch (e) {
        throw failure(e);
      }
    };
    /** Writes what waited, after `pending`, one record at a time as each write's promise resolves. */
    const writeWaiting = async (pending: PromiseLike<void>): Promise<void> => {
      try {
        await pending;
        while (waiting.length > 0) {
          const { value, timestamp } = waiting.shift()!;
          const result = writer!.write(value, timestamp);
          if (result !== undefined) await result;
        }
      } catch (e) {
        throw failure(e);
      } finally {
        writing = undefined;
      }
    };
    /** Runs `f` (a call of the writer) now, or once the writes in progress are done. */
    const afterWrites = <R>(f: () => R | PromiseLike<R>): R | PromiseLike<R> => (writing === undefined ? call(f) : writing.then(() => call(f)));
    /** A promise a writer returned, as work of the task; its rejection fails the task naming the sink. */
    const track = (result: unknown, kind: "blocking" | "background"): void => {
      if (!isThenable(result)) return;
      ctx.awaitWork(
        Promise.resolve(result).catch((e: unknown) => {
          throw failure(e);
        }),
        kind,
      );
    };
    const errors = recordErrorPolicy(ctx, output);
    const skipsBadRecords = ctx.errorPolicy !== undefined && ctx.errorPolicy.policy !== "fail";
    const sinkContext: SinkContext = {
      subtaskIndex: ctx.subtaskIndex,
      parallelism: ctx.parallelism,
      operatorName: ctx.operatorName,
      job: ctx.job,
      reportBadRecord(value, cause) {
        // `fail`: thrown here, so the writer's promise rejects with it. Otherwise counted (and
        // dead-lettered) on the task thread: the writer may call from any callback, the
        // output may be used only between records.
        if (!skipsBadRecords) errors.onRecordError(cause, value, NO_TIMESTAMP);
        else ctx.postMail(() => errors.onRecordError(cause, value, NO_TIMESTAMP));
      },
    };
    const retry = sink.commitRetry ?? DEFAULT_COMMIT_RETRY;
    const commitWithRetry = async (committables: readonly unknown[]): Promise<void> => {
      for (let attempt = 1; ; attempt++) {
        try {
          await committer!.commit(committables);
          return;
        } catch (e) {
          if (attempt >= retry.attempts) {
            throw new EddyError(
              "SINK_COMMIT_FAILED",
              `sink '${ctx.operatorName}' (subtask ${ctx.subtaskIndex}) could not commit after ${attempt} attempt${attempt === 1 ? "" : "s"}: ${describeCause(e)}`,
              { operator: ctx.operatorName, subtask: ctx.subtaskIndex, cause: e },
            );
          }
          const waitMs = Math.min(retry.initialBackoffMs * 2 ** (attempt - 1), retry.maxBackoffMs);
          ctx.logger.warn("sink commit failed; retrying", { operator: ctx.operatorName, subtask: ctx.subtaskIndex, attempt, retryInMs: waitMs, error: describeCause(e) });
          await new Promise((resolve) => setTimeout(resolve, waitMs));
        }
      }
    };
    /** Commits what checkpoints up to `checkpointId` pre-committed, after the commits started before. */
    const commitUpTo = (checkpointId: number): void => {
      const due = pending.filter((p) => p.checkpointId <= checkpointId);
      if (due.length === 0) return;
      const step = committing.then(async () => {
        const all = (await Promise.all(due.map((p) => p.committables))).flat();
        if (all.length > 0) await commitWithRetry(all);
        pending = pending.filter((p) => !due.includes(p));
      });
      committing = step;
      // Beside the task, which goes on reading; the job does not end before it.
      ctx.awaitWork(
        step.catch((e: unknown) => {
          throw e instanceof EddyError && e.code === "SINK_COMMIT_FAILED" ? e : failure(e);
        }),
        "background",
      );
    };
    /** prepareCommit's committables, kept until committed; a promise of them is tracked so its rejection fails the task. */
    const preCommit = (checkpointId: number): void => {
      const committables = afterWrites(() => writer?.prepareCommit?.(checkpointId) ?? []);
      if (isThenable(committables)) track(committables, "background");
      else if (committables.length === 0) return;
      pending.push({ checkpointId, committables });
    };
    const checkpointing = ctx.checkpointing;
    const twoPhase = sink.createCommitter !== undefined;
    let restored: readonly unknown[] | undefined;
    const owner = sink.committableOwner;
    if (twoPhase && checkpointing !== undefined) {
      // With an owner: every subtask restores all committables and keeps its owners' (below).
      restored = checkpointing.registerOperatorState(PENDING_COMMITTABLES_STATE, owner === undefined ? "split" : "union", (checkpointId) => {
        preCommit(checkpointId);
        const entries = pending.slice();
        if (!entries.some((p) => isThenable(p.committables))) return entries as Pending[];
        // The checkpoint's asynchronous part waits for them (and a rejection declines it).
        return Promise.all(entries.map(async (p): Promise<Pending> => ({ checkpointId: p.checkpointId, committables: await p.committables })));
      });
      checkpointing.addListener({ notifyCheckpointComplete: commitUpTo });
    }
    return {
      open() {
        const restoredState = checkpointing?.restored?.operatorState(SINK_WRITER_STATE);
        const restoredCheckpointId = checkpointing?.restored?.checkpointId;
        const w = call(() => sink.createWriter(restoredState === undefined && restoredCheckpointId === undefined ? sinkContext : { ...sinkContext, restoredState, restoredCheckpointId }));
        writer = w;
        if (checkpointing !== undefined && w.snapshotState !== undefined) {
          // Registered now, after the committables' state: at a barrier prepareCommit runs first.
          checkpointing.registerOperatorState(SINK_WRITER_STATE, "split", (checkpointId) => {
            const state = afterWrites(() => w.snapshotState!(checkpointId));
            if (isThenable(state)) track(state, "background");
            return state;
          });
        }
        if (twoPhase) committer = call(() => sink.createCommitter!(sinkContext));
        // Restored committables belong to the checkpoint the job restarts from, which completed.
        if (restored !== undefined) {
          pending = owner === undefined ? (restored as Pending[]).slice() : ownCommittables(restored as Pending[], (c) => call(() => owner(c)) % ctx.parallelism === ctx.subtaskIndex);
          commitUpTo(Number.POSITIVE_INFINITY);
        }
      },
      processElement(value, timestamp) {
        written.inc();
        const ts = hasTimestamp(timestamp) ? timestamp : undefined;
        if (writing !== undefined) {
          waiting.push({ value, timestamp: ts });
          return;
        }
        let result: void | PromiseLike<void>;
        try {
          result = writer!.write(value, ts);
        } catch (e) {
          throw failure(e);
        }
        if (result === undefined) return;
        // The writer took the record and asks the task to wait before the next one.
        writing = writeWaiting(result);
        ctx.awaitWork(writing, "blocking");
      },
      processWatermark() {},
      processWatermarkStatus() {},
      endInput() {
        const flushed = afterWrites(() => writer?.flush?.(true));
        // With checkpointing, what is left is committed by the job's final checkpoint.
        if (!twoPhase || checkpointing !== undefined) return track(flushed, "blocking");
        // Without: commit it now, after the flush; the task ends once the commit succeeded.
        const last = (async () => {
          await flushed;
          const committables = await call(() => writer?.prepareCommit?.() ?? []);
          if (committables.length > 0) pending.push({ checkpointId: Number.POSITIVE_INFINITY, committables });
          commitUpTo(Number.POSITIVE_INFINITY);
          await committing;
        })();
        ctx.awaitWork(
          last.catch((e: unknown) => {
            throw e instanceof EddyError ? e : failure(e);
          }),
          "blocking",
        );
      },
      close() {
        const w = writer;
        const c = committerOpen ? committer : undefined;
        writer = undefined;
        committerOpen = false;
        const closing = (what: string, f: () => unknown): void => {
          const closed = call(f);
          if (isThenable(closed)) {
            Promise.resolve(closed).catch((e: unknown) => ctx.logger.warn(`sink ${what} failed to close`, { operator: ctx.operatorName, subtask: ctx.subtaskIndex, error: describeCause(e) }));
          }
        };
        try {
          if (w !== undefined) closing("writer", () => w.close?.());
        } finally {
          if (c !== undefined) closing("committer", () => c.close?.());
        }
      },
    };
  };
}
