/**
 * How a worker finds the job it must rebuild (functions are never serialized; every worker imports
 * the job's module and builds the same graph: docs/design/architecture.md, "A job is a module"). A
 * job reference is the module URL plus the name of the export that holds the definition. It is only
 * trusted after the coordinator has checked that this export *is* the definition being run: a job
 * made by a factory call (`makeJob(params)`) or defined inside a test cannot be rebuilt elsewhere,
 * and rebuilding a different definition of the same name would silently run another job.
 */
import { EddyError } from "../core/errors.ts";
import { buildJob, isJobDefinition, type JobDefinition } from "../api/define-job.ts";
import { compilePlan, type Plan } from "../graph/plan.ts";
import type { Logger } from "../core/logger.ts";
import type { StreamExecutionEnvironment } from "../api/environment.ts";
import { importModule } from "./preloaded-modules.ts";

export interface JobRef {
  readonly moduleUrl: string;
  readonly exportName: string;
  readonly jobName: string;
}

/** Finds the export of the job's module that holds `job`; returns why not when there is none. */
export async function locateJob(job: JobDefinition): Promise<JobRef | { readonly reason: string }> {
  const reasons: string[] = [];
  for (const url of job.moduleUrls) {
    if (/\.test\.[cm]?[jt]sx?$/.test(url)) {
      reasons.push(`it is defined in a test file (${url})`);
      continue;
    }
    let module: Record<string, unknown> | undefined;
    try {
      module = await importLoaded(url);
    } catch (e) {
      reasons.push(`${url} cannot be imported: ${e instanceof Error ? e.message : String(e)}`);
      continue;
    }
    if (module === undefined) {
      reasons.push(`${url} is still being evaluated (a job awaited at a module's top level runs inline)`);
      continue;
    }
    for (const [exportName, value] of Object.entries(module)) {
      if (value === job) return { moduleUrl: url, exportName, jobName: job.name };
    }
    reasons.push(`no export of ${url} is this definition`);
  }
  if (reasons.length === 0) return { reason: "the module that defined it is unknown" };
  return { reason: `${reasons.join("; ")} (export the job from a module's top level to run it on threads)` };
}

/**
 * Imports a module that is on the current call stack, so already loaded. If it is still being
 * evaluated (its top level awaits this very job), importing it would wait forever: give up after a
 * while and say so. The wait is generous: re-importing a loaded module through the TypeScript
 * loader took over 50 ms on a loaded machine, and a job wrongly run inline is worse than a
 * one-second wait in the rare top-level-await case.
 */
const STILL_EVALUATING_AFTER_MS = 1_000;
async function importLoaded(url: string): Promise<Record<string, unknown> | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), STILL_EVALUATING_AFTER_MS);
  });
  try {
    return await Promise.race([import(url) as Promise<Record<string, unknown>>, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** In a worker: imports the module and returns the referenced definition. */
export async function loadJob(ref: JobRef): Promise<JobDefinition> {
  const module = await importModule(ref.moduleUrl);
  const job = module[ref.exportName];
  if (!isJobDefinition(job) || job.name !== ref.jobName) {
    throw new EddyError(
      "JOB_NOT_FOUND",
      `worker could not find job '${ref.jobName}' as export '${ref.exportName}' of ${ref.moduleUrl}`,
    );
  }
  return job;
}

export interface PlanSettings {
  readonly parallelism?: number | undefined;
  readonly maxParallelism?: number | undefined;
  /** See PlanOptions.restoredMaxParallelism. */
  readonly restoredMaxParallelism?: Readonly<Record<string, number>> | undefined;
}

/** Builds the job's graph and compiles it; the coordinator and every worker call this alike. */
export function planJob(job: JobDefinition, settings: PlanSettings, logger: Logger): { env: StreamExecutionEnvironment; plan: Plan } {
  const env = buildJob(job);
  const plan = compilePlan(env._builder().transformations, {
    jobName: job.name,
    parallelism: env.getParallelism() ?? settings.parallelism ?? 1,
    maxParallelism: env.getMaxParallelism() ?? settings.maxParallelism,
    restoredMaxParallelism: settings.restoredMaxParallelism,
    logger,
  });
  return { env, plan };
}

/**
 * A summary of the plan's shape: chains, operator ids, parallelism and edges. A worker whose
 * plan differs from the coordinator's (a job built non-deterministically, e.g. from random
 * numbers or the clock) refuses to run rather than exchange records with the wrong operators.
 */
export function planFingerprint(plan: Plan): string {
  return JSON.stringify(
    plan.chains.map((c) => [
      c.parallelism,
      c.nodes.map((n) => [
        n.operatorId,
        n.parallelism,
        n.maxParallelism,
        n.outputs.map((e) => [e.target.operatorId, e.inputIndex, e.partitioner.type, e.sideTag ?? null, e.chained]),
      ]),
    ]),
  );
}
