/**
 * The `eddy` command line. Output discipline: `print()` records go to stdout; logs, progress and
 * errors go to stderr; a failed job exits non-zero with the error's one-line message.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { describeCause, EddyError } from "../core/errors.ts";
import { jsonLogger, type LogLevel } from "../core/logger.ts";
import { startJob } from "./local-job.ts";

const HELP = `eddy — a stateful stream processor for TypeScript

Usage:
  eddy run <job.ts> [options]   Run a job module (its default export is defineJob(...))
  eddy --help                   Show this help

Options for run:
  -p, --parallelism <n>         Default parallelism for operators the job does not set (default 1)
      --max-parallelism <n>     Number of key groups (default: derived from the parallelism)
      --workers <n>             Worker threads (default: one per core, at most the parallelism)
      --inline                  Run every subtask on the main thread instead of worker threads
      --log-level <level>       debug | info | warn | error | silent (default warn)
      --no-progress             Do not report progress on stderr

Records written by print() go to stdout as JSON lines; logs and progress go to stderr.
`;

function fail(message: string, code = 1): never {
  process.stderr.write(`eddy: ${message}\n`);
  process.exit(code);
}

function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) fail(`${flag} needs a positive integer, got '${value}'`, 2);
  return n;
}

async function main(argv: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        help: { type: "boolean", short: "h" },
        parallelism: { type: "string", short: "p" },
        "max-parallelism": { type: "string" },
        workers: { type: "string" },
        inline: { type: "boolean" },
        "log-level": { type: "string" },
        "no-progress": { type: "boolean" },
      },
    });
  } catch (e) {
    fail(`${(e as Error).message}\n\n${HELP}`, 2);
  }
  const { values, positionals } = parsed;
  const [command, jobPath, ...rest] = positionals;
  if (values.help || command === undefined || command === "help") {
    process.stdout.write(HELP);
    return;
  }
  if (command !== "run") fail(`unknown command '${command}'\n\n${HELP}`, 2);
  if (jobPath === undefined) fail("run needs a job file: eddy run <job.ts>", 2);
  if (rest.length > 0) fail(`unexpected arguments: ${rest.join(" ")}`, 2);
  const level = (values["log-level"] ?? "warn") as LogLevel;
  if (!["debug", "info", "warn", "error", "silent"].includes(level)) fail(`unknown log level '${level}'`, 2);
  const logger = jsonLogger((line) => void process.stderr.write(line), level);

  let module: unknown;
  const file = resolve(process.cwd(), jobPath);
  try {
    module = await import(pathToFileURL(file).href);
  } catch (e) {
    fail(`cannot load job module '${jobPath}': ${describeCause(e)}`);
  }

  let stdoutBroken = false;
  process.stdout.on("error", (e: NodeJS.ErrnoException) => {
    // `eddy run job.ts | head` closes the pipe early: stop the job quietly.
    if (e.code === "EPIPE") {
      stdoutBroken = true;
      execution?.cancel();
    }
  });
  let execution: ReturnType<typeof startJob> | undefined;
  try {
    execution = startJob(module, {
      parallelism: positiveInt(values.parallelism, "--parallelism"),
      maxParallelism: positiveInt(values["max-parallelism"], "--max-parallelism"),
      workers: positiveInt(values.workers, "--workers"),
      ...(values.inline === true ? { mode: "inline" as const } : {}),
      logger,
      logLevel: level,
    });
  } catch (e) {
    fail(e instanceof EddyError ? e.message : describeCause(e));
  }
  const progress = values["no-progress"] !== true && process.stderr.isTTY === true;
  const startedAt = Date.now();
  const timer = progress
    ? setInterval(() => {
        const n = execution!.sourceRecords;
        const s = (Date.now() - startedAt) / 1000;
        process.stderr.write(`\r[eddy] ${execution!.jobName}: ${n.toLocaleString("en")} records read in ${s.toFixed(1)} s`);
      }, 500)
    : undefined;
  try {
    const result = await execution.done;
    if (timer !== undefined) process.stderr.write("\n");
    const rate = result.durationMs > 0 ? Math.round((result.sourceRecords * 1000) / result.durationMs) : result.sourceRecords;
    process.stderr.write(
      `[eddy] job '${result.jobName}' finished: ${result.sourceRecords.toLocaleString("en")} records in ${result.durationMs} ms (${rate.toLocaleString("en")} records/s)\n`,
    );
  } catch (e) {
    if (timer !== undefined) process.stderr.write("\n");
    if (stdoutBroken) return;
    fail(e instanceof EddyError ? `job '${execution.jobName}' failed: ${e.message}` : describeCause(e));
  } finally {
    if (timer !== undefined) clearInterval(timer);
  }
}

await main(process.argv.slice(2));
