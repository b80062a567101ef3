/** Runs a job in-process for tests; see `startJob` for the options. */
import { startJob, type JobExecution, type RunOptions } from "../coordinator/local-job.ts";
import type { JobDefinition } from "../api/define-job.ts";

export type JobHandle = JobExecution;

/** Starts `jobOrModule` (a job definition, or a module whose default export is one). */
export function runJob(jobOrModule: JobDefinition | { readonly default: unknown }, options: RunOptions = {}): JobHandle {
  return startJob(jobOrModule, options);
}
