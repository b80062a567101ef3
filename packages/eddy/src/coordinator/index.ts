/**
 * coordinator/ — what a JobManager does, in this process: starting a job and its handle
 * (local-job.ts), its inline and threaded execution attempts, the checkpoint runner, recovery and
 * restarts (attempt-supervisor.ts, with the pure decisions in checkpoint/recovery.ts), configuration
 * keys, and reading a stuck worker's stack for the watchdog.
 *
 * May import: the layers below, executor/ included.
 *
 * Invariants: one coordinator per job run; it runs on the calling thread and never runs user
 * functions of tasks itself in threaded mode (split enumerators aside); a job ends once, with a
 * result or an EddyError.
 */
export { startJob, type JobExecution, type RunOptions } from "./local-job.ts";
