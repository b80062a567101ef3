/**
 * executor/ — what runs tasks (Flink's TaskManager side): the task executor and its cooperative
 * loop (task-executor.ts), a worker thread and the messages it exchanges with the coordinator
 * (thread-worker.ts, thread-protocol.ts), the bundle workers start from (worker-bundle.ts),
 * doorbells between workers, the busy board of the task watchdog, and restoring a task's state
 * from a checkpoint (checkpoint-restore.ts; the formats it reads are in checkpoint/format/).
 *
 * May import: the layers below (core … api), http/ and queryable/.
 *
 * Invariants: a task's state is touched only on its thread; an executor's loop never blocks;
 * nothing here decides when a checkpoint is taken or a job restarts (coordinator/ does).
 */
export { SOURCE_SPLITS_STATE, TaskExecutor, taskIdOf } from "./task-executor.ts";
