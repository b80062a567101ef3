/**
 * Starts a job in this process: builds the graph from the job definition, compiles the plan and
 * runs it inline. Used by `eddy run` and by `runJob` in tests.
 */
import { SystemClock, type Clock } from "../core/clock.ts";
import { silentLogger, type Logger } from "../core/logger.ts";
import { buildJob, resolveJob } from "../api/define-job.ts";
import { compilePlan, type Plan } from "../graph/plan.ts";
import { InlineExecution, type JobResult } from "./inline-executor.ts";

export interface RunOptions {
  /** Default parallelism for operators the job does not configure (the job's own setting wins). */
  readonly parallelism?: number;
  readonly maxParallelism?: number;
  /** Processing time; a ManualClock in tests. */
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Where `print()` writes lines; process.stdout by default. */
  readonly stdout?: (line: string) => void;
  /** Records per channel batch (default 512). */
  readonly batchRecords?: number;
  /** Credit per channel in records (default 16 batches). */
  readonly channelCapacityRecords?: number;
  /** A partly filled batch is sent once its oldest record is this old, in ms (default 2). */
  readonly flushTimeoutMs?: number;
}

export interface JobExecution {
  readonly jobName: string;
  readonly plan: Plan;
  /** Settles when a bounded job has finished (or the job failed / was cancelled). */
  readonly done: Promise<JobResult>;
  /** What the collect sink named `name` has received so far. */
  collected<T = unknown>(name: string): T[];
  /** Resolves the next time every task waits for time or data (for tests with a manual clock). */
  whenIdle(): Promise<void>;
  /** Records read by the sources so far. */
  readonly sourceRecords: number;
  cancel(): void;
}

export function startJob(jobOrModule: unknown, options: RunOptions = {}): JobExecution {
  const job = resolveJob(jobOrModule);
  const env = buildJob(job);
  const logger = options.logger ?? silentLogger;
  const plan = compilePlan(env._builder().transformations, {
    jobName: job.name,
    parallelism: env.getParallelism() ?? options.parallelism ?? 1,
    maxParallelism: env.getMaxParallelism() ?? options.maxParallelism,
    logger,
  });
  const results = new Map<string, unknown[]>();
  const stdout = options.stdout ?? ((line: string) => void process.stdout.write(line + "\n"));
  const batchRecords = options.batchRecords ?? 512;
  const execution = new InlineExecution(plan, {
    clock: options.clock ?? new SystemClock(),
    logger,
    services: {
      jobName: job.name,
      collect(name, value) {
        let list = results.get(name);
        if (list === undefined) results.set(name, (list = []));
        list.push(value);
      },
      writeStdout: stdout,
    },
    autoWatermarkIntervalMs: env.getAutoWatermarkInterval(),
    batchRecords,
    channelCapacityRecords: options.channelCapacityRecords ?? batchRecords * 16,
    maxRecordsPerSlice: batchRecords * 8,
    flushTimeoutMs: options.flushTimeoutMs ?? 2,
    yieldIntervalMs: 10,
  });
  return {
    jobName: job.name,
    plan,
    done: execution.done,
    collected: <T>(name: string) => [...(results.get(name) ?? [])] as T[],
    whenIdle: () => execution.whenIdle(),
    get sourceRecords() {
      return execution.sourceRecords;
    },
    cancel: () => execution.cancel(),
  };
}

