/**
 * The `eddy` command line. Output discipline: `print()` records go to stdout; logs, progress and
 * errors go to stderr; a failed job exits non-zero with the error's one-line message.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { describeCause, EddyError } from "../core/errors.ts";
import { formattedLogger, truncateText, type Logger, type LogFormat, type LogLevel } from "../core/logger.ts";
import { stackWithCauses, userLocation, userStacksOnly } from "../core/user-frames.ts";
import { getHeapStatistics } from "node:v8";
import type { RestartStrategyConfig } from "../checkpoint/restart-strategy.ts";
import { controlCommand, isControlCommand } from "./control-cli.ts";
import { startControlServer, type ControlServer } from "./control-server.ts";
import { runSummary } from "./run-summary.ts";
import { StatusLine } from "./status-line.ts";
import { progressLine, progressOf, ProgressRates } from "./progress.ts";
import type { JobExecution, RunOptions } from "../coordinator/local-job.ts";
import { DURATION_SYNTAX, optionsFromConfig, parseDuration } from "../coordinator/config.ts";
import { eddyVersion } from "../core/version.ts";
import { commonJsJobProblem } from "./module-format.ts";

const HELP = `eddy — a stateful stream processor for TypeScript

Usage:
  eddy run <job.ts> [options]   Run a job module (its default export is defineJob(...))
  eddy list [--json] [--all]    The jobs running on this machine (--all: also those gone)
  eddy savepoint <jobId> [--dir <dir>]
                                Take a savepoint of a running job; prints its path
  eddy stop <jobId> [--savepoint [--drain] [--dir <dir>]]
                                Stop a running job, with a final savepoint when asked (--drain:
                                fire every window and event-time timer first); prints its path
  eddy cancel <jobId>           End a running job at once, without a savepoint
  eddy query <jobId> <name> <key> [--json]
                                Read a key of a queryable state of a running job: prints the
                                value as JSON, or 'absent' (--json: {"found":…,"value":…}); the
                                key is JSON if it parses as JSON (42, "42", ["a",1]), else a string
  eddy ui [<jobId>]             Print a one-time login link to a running job's web UI (works
                                once, within a minute; the job id may be left out when one runs)
  eddy savepoint inspect <dir> [--json]
                                What a savepoint (or checkpoint) holds: operators, states, sizes
  eddy init [<dir>] [--name <n>]
                                Start a new job project in <dir> (default: here): package.json,
                                tsconfig, a sample job and its test (also: npm create eddy)
  eddy --help                   Show this help
  eddy --version                Show Eddy's version

Options for run:
  -p, --parallelism <n>         Default parallelism for operators the job does not set (default 1)
      --max-parallelism <n>     Number of key groups (default: derived from the parallelism)
      --workers <n>             Worker threads (default: one per core, at most the parallelism)
      --inline                  Run every subtask on the main thread instead of worker threads
                                (by default even -p 1 runs on one worker, where a function that
                                never returns, exits or runs out of memory is caught and named)
      --log-level <level>       debug | info | warn | error | silent (default warn)
      --log-format <format>     text (default: one line per entry for people) | json (one JSON
                                object per line: level, time, msg and the entry's fields)
      --verbose                 A failure's log line carries its whole stack, Eddy's frames too
                                (by default only the frames of the job's own code)
      --no-progress             No live status line on stderr (it is drawn only on a terminal:
                                records in/out per second, watermark lag, backpressure, the
                                last checkpoint, restarts)
      --no-control              Do not start the job's control API (used by list/savepoint/stop/cancel)

Checkpoints (see the README):
      --checkpoint-interval <d>    Take a checkpoint every <d>: 500ms, 10s, 5min, 1h; a bare
                                   number is ms (overrides the job's setting)
      --checkpoint-mode <mode>     exactly-once (default) | at-least-once
      --checkpoint-dir <dir>       Where checkpoints go (default ./.eddy/checkpoints/<job-id>/)
      --job-id <id>                The job's checkpoint directory name (default: its name)
      --from-checkpoint <dir>      Resume from <dir> = <checkpoint-dir>/<job-id>/chk-<n>
      --from-latest-checkpoint     Resume from the newest complete checkpoint of this job id
                                   (under --checkpoint-dir); a damaged one fails the run
      --from-savepoint <dir>       Resume from a savepoint directory (any parallelism up to max)
      --allow-non-restored-state   Drop savepoint state of operators (uids) the job no longer has
      --savepoint-dir <dir>        Where savepoints go (default ./.eddy/savepoints)
      --restart-strategy <spec>    none | fixed-delay[:attempts[:delayMs]] (default fixed-delay:3:1000)
                                   | exponential-delay[:initialMs[:maxMs]] | failure-rate[:max[:intervalMs[:delayMs]]]
  -D, --define <key=value>         A configuration key, e.g. -D execution.checkpointing.interval=10s
                                   (see the README; flags win over keys)

Control: a running job serves a local control API (loopback only, bearer token); its registry
entry and token file (mode 0600) are in $EDDY_HOME/jobs (default ~/.eddy/jobs). With --dir, the
CLI moves the savepoint directory there itself. Queryable state is read with the same token,
from state servers on loopback (eddy query, GET /v1/jobs/<id>/state/<name>/<key>, eddy/query).

Records written by print() go to stdout as JSON lines; logs, the status line and the final
summary go to stderr.
`;

function fail(message: string, code = 1): never {
  process.stderr.write(`eddy: ${truncateText(message)}\n`);
  process.exit(code);
}

function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) fail(`${flag} needs a positive integer, got '${value}'`, 2);
  return n;
}

/** `-D key=value` flags as configuration entries; usage errors exit 2. */
function defines(list: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const d of list) {
    const i = d.indexOf("=");
    if (i <= 0) fail(`-D needs key=value, got '${d}'`, 2);
    out[d.slice(0, i).trim()] = d.slice(i + 1);
  }
  return out;
}

/** RunOptions from the checkpoint flags; usage errors exit 2. */
function checkpointOptions(values: Record<string, string | boolean | string[] | undefined>): { -readonly [K in keyof RunOptions]?: RunOptions[K] } {
  const str = (name: string): string | undefined => values[name] as string | undefined;
  const out: { -readonly [K in keyof RunOptions]?: RunOptions[K] } = {};
  const interval = str("checkpoint-interval");
  const mode = str("checkpoint-mode");
  if (mode !== undefined && mode !== "exactly-once" && mode !== "at-least-once") fail(`--checkpoint-mode must be exactly-once or at-least-once, got '${mode}'`, 2);
  if (interval !== undefined) {
    const intervalMs = parseDuration(interval);
    if (intervalMs === undefined || intervalMs <= 0) fail(`--checkpoint-interval needs ${DURATION_SYNTAX}, above 0; got '${interval}'`, 2);
    out.checkpointing = { intervalMs, ...(mode === undefined ? {} : { mode }) };
  } else if (mode !== undefined) {
    fail("--checkpoint-mode needs --checkpoint-interval", 2);
  }
  if (str("checkpoint-dir") !== undefined) out.checkpointDir = str("checkpoint-dir");
  if (str("job-id") !== undefined) out.jobId = str("job-id");
  if (str("from-checkpoint") !== undefined) out.fromCheckpoint = str("from-checkpoint");
  if (values["from-latest-checkpoint"] === true && (out.fromCheckpoint !== undefined || str("from-savepoint") !== undefined)) {
    fail("--from-latest-checkpoint cannot go with --from-checkpoint or --from-savepoint", 2);
  }
  if (str("from-savepoint") !== undefined) out.fromSavepoint = str("from-savepoint");
  if (str("savepoint-dir") !== undefined) out.savepointDir = str("savepoint-dir");
  if (values["allow-non-restored-state"] === true) {
    if (out.fromSavepoint === undefined && out.fromCheckpoint === undefined && values["from-latest-checkpoint"] !== true) {
      fail("--allow-non-restored-state needs --from-savepoint, --from-checkpoint or --from-latest-checkpoint", 2);
    }
    out.allowNonRestoredState = true;
  }
  const strategy = str("restart-strategy");
  if (strategy !== undefined) out.restartStrategy = parseRestartStrategy(strategy);
  return out;
}

function parseRestartStrategy(spec: string): RestartStrategyConfig {
  const [type, ...parts] = spec.split(":");
  const nums = parts.map((p) => {
    const n = Number(p);
    if (p === "" || !Number.isFinite(n) || n < 0) fail(`--restart-strategy: '${p}' is not a non-negative number (in '${spec}')`, 2);
    return n;
  });
  switch (type) {
    case "none":
      return { type: "none" };
    case "fixed-delay":
      return { type: "fixed-delay", attempts: nums[0] ?? 3, delayMs: nums[1] ?? 1_000 };
    case "exponential-delay":
      return { type: "exponential-delay", initialDelayMs: nums[0] ?? 1_000, maxDelayMs: nums[1] ?? 60_000 };
    case "failure-rate":
      return { type: "failure-rate", maxFailures: nums[0] ?? 3, intervalMs: nums[1] ?? 60_000, delayMs: nums[2] ?? 1_000 };
    default:
      return fail(`--restart-strategy: unknown strategy '${type}' (none, fixed-delay, exponential-delay, failure-rate)`, 2);
  }
}

/** One line per recent checkpoint and the restarts, for stderr at the end of a run. */
/** The options of `eddy run` (and --help, --version). */
const RUN_OPTIONS = {
    help: { type: "boolean", short: "h" },
    version: { type: "boolean" },
    parallelism: { type: "string", short: "p" },
    "max-parallelism": { type: "string" },
    workers: { type: "string" },
    inline: { type: "boolean" },
    "log-level": { type: "string" },
    "log-format": { type: "string" },
    verbose: { type: "boolean" },
    "no-progress": { type: "boolean" },
    "no-control": { type: "boolean" },
    "checkpoint-interval": { type: "string" },
    "checkpoint-mode": { type: "string" },
    "checkpoint-dir": { type: "string" },
    "job-id": { type: "string" },
    "from-checkpoint": { type: "string" },
    "from-latest-checkpoint": { type: "boolean" },
    "from-savepoint": { type: "string" },
    "allow-non-restored-state": { type: "boolean" },
    "savepoint-dir": { type: "string" },
    "restart-strategy": { type: "string" },
    define: { type: "string", short: "D", multiple: true },
} as const satisfies NonNullable<Parameters<typeof parseArgs>[0]>["options"];

async function main(argv: string[]): Promise<void> {
  const first = argv[0];
  if (first !== undefined && isControlCommand(first)) {
    try {
      await controlCommand(first, argv.slice(1));
    } catch (e) {
      if (e instanceof EddyError && e.code === "USAGE") fail(`${e.message} (see eddy --help)`, 2);
      fail(e instanceof EddyError ? e.message : describeCause(e));
    }
    return;
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: RUN_OPTIONS,
    });
  } catch (e) {
    fail(usageError(e as Error & { code?: string }, RUN_OPTIONS), 2);
  }
  const { values, positionals } = parsed;
  if (values.version === true) {
    process.stdout.write(`eddy ${eddyVersion()}\n`);
    return;
  }
  const [command, jobPath, ...rest] = positionals;
  if (values.help || command === undefined || command === "help") {
    process.stdout.write(HELP);
    return;
  }
  if (command !== "run") fail(`unknown command '${command}'${suggestion(command, ["run", "init", "list", "savepoint", "stop", "cancel", "query", "ui", "help"], "")} (see eddy --help)`, 2);
  if (jobPath === undefined) fail("run needs a job file: eddy run <job.ts>", 2);
  if (rest.length > 0) fail(`unexpected arguments: ${rest.join(" ")}`, 2);
  const level = (values["log-level"] ?? "warn") as LogLevel;
  if (!["debug", "info", "warn", "error", "silent"].includes(level)) fail(`unknown log level '${level}'`, 2);
  // Records, logs and the progress line share the terminal through one StatusLine (status-line.ts).
  const status = new StatusLine(process.stderr, process.stdout, values["no-progress"] !== true);
  // A failure's line names the user's file:line:column; its stack shows the user's frames only,
  // unless --verbose (user-frames.ts).
  const format = (values["log-format"] ?? "text") as LogFormat;
  if (format !== "text" && format !== "json") fail(`unknown log format '${format}' (text, json)`, 2);
  const lines = formattedLogger(format, (line) => status.writeError(line), level);
  const logger = values.verbose === true ? lines : userStacksOnly(lines);

  // Loaded here, not at the top: the control commands (eddy list, …) start faster without the runtime.
  const { startJob, latestCheckpointOf } = await import("../coordinator/local-job.ts");
  let module: unknown;
  const file = resolve(process.cwd(), jobPath);
  if (!existsSync(file)) fail(`job file '${jobPath}' does not exist (looked for ${file})`, 2);
  const commonJs = commonJsJobProblem(file);
  if (commonJs !== undefined) fail(commonJs, 2);
  try {
    module = await import(pathToFileURL(file).href);
  } catch (e) {
    const stack = e instanceof Error ? stackWithCauses(e) : undefined;
    const at = stack === undefined ? undefined : userLocation(stack);
    fail(`cannot load job module '${jobPath}': ${describeCause(e)}${at === undefined ? "" : ` (at ${at})`}`);
  }

  let stdoutBroken = false;
  process.stdout.on("error", (e: NodeJS.ErrnoException) => {
    // `eddy run job.ts | head` closes the pipe early: stop the job quietly.
    if (e.code === "EPIPE") {
      stdoutBroken = true;
      execution?.cancel();
    }
  });
  const restoreOptions = checkpointOptions(values);
  const config = defines(values.define ?? []);
  if (values["from-latest-checkpoint"] === true) {
    let found;
    try {
      found = await latestCheckpointOf(module, { ...restoreOptions, config });
    } catch (e) {
      fail(e instanceof EddyError ? e.message : describeCause(e));
    }
    if (found.checkpoint === undefined) fail(`--from-latest-checkpoint: no complete checkpoint in '${found.searched}'`);
    process.stderr.write(`[eddy] resuming from ${found.checkpoint}\n`);
    restoreOptions.fromCheckpoint = found.checkpoint;
  }

  let execution: JobExecution | undefined;
  const uncaught = values.inline === true ? watchInlineUserCode(() => execution, logger) : undefined;
  try {
    execution = startJob(module, {
      parallelism: positiveInt(values.parallelism, "--parallelism"),
      maxParallelism: positiveInt(values["max-parallelism"], "--max-parallelism"),
      workers: positiveInt(values.workers, "--workers"),
      ...(values.inline === true ? { mode: "inline" as const } : { preferThreads: true }),
      logger,
      logLevel: level,
      stdout: (line) => status.writeRecord(line),
      ...restoreOptions,
      config,
    });
  } catch (e) {
    fail(e instanceof EddyError ? e.message : describeCause(e));
  }
  // Ctrl-C / SIGTERM: cancel the job (its control API entry is removed below); a second one exits at once.
  let signalled: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (signalled !== undefined) process.exit(130);
    signalled = signal;
    status.writeError(`\n[eddy] ${signal}: cancelling job '${execution!.jobName}' (again to exit at once)\n`);
    execution!.cancel();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  let control: ControlServer | undefined;
  if (values["no-control"] !== true) {
    const id = execution.id;
    try {
      control = await startControlServer(execution, { logger, port: optionsFromConfig(config).restPort });
    } catch (e) {
      execution.cancel();
      await execution.done.catch(() => undefined);
      fail(`${e instanceof EddyError ? e.message : describeCause(e)} (or run with --no-control)`);
    }
    process.stderr.write(`[eddy] job '${execution.jobName}' (id ${id}) control API on ${control.url}, token in ${control.tokenFile}\n`);
    process.stderr.write(`[eddy] web UI on ${control.url}/ (log in with: eddy ui ${id})\n`);
  }
  // The live status line, about once a second (progress.ts): rates over the last 5 s, watermark
  // lag, backpressure, the last checkpoint, restarts.
  const rates = new ProgressRates();
  const timer = status.enabled
    ? setInterval(() => {
        const p = progressOf(execution!, execution!.sourceRecords, Date.now());
        status.show(progressLine(p, rates.update(p), process.stderr.columns));
      }, STATUS_INTERVAL_MS)
    : undefined;
  const outcome = await execution.done.then(
    (result) => ({ result }),
    (error: unknown) => ({ error }),
  );
  clearInterval(timer);
  status.clear();
  // Before reporting: fail() exits the process, and the registry entry must not outlive the job.
  await control?.close();
  // An error from user code outside the job's functions (inline) ended the job: it is the cause.
  const userCallbackError = uncaught?.error();
  if (userCallbackError !== undefined) fail(`job '${execution.jobName}' failed: ${userCallbackError}`);
  if ("error" in outcome) {
    if (stdoutBroken) return;
    const e = outcome.error;
    if (e instanceof EddyError && e.code === "JOB_CANCELLED") {
      // Cancelled on purpose (a signal, eddy cancel): said, not a failure of the job.
      process.stderr.write(`[eddy] job '${execution.jobName}' cancelled${signalled === undefined ? "" : ` (${signalled})`}\n`);
      process.exit(signalled === undefined ? 0 : 130);
    }
    fail(e instanceof EddyError ? `job '${execution.jobName}' failed: ${e.message}` : describeCause(e));
  }
  const { result } = outcome;
  if (execution.status() === "stopped") process.stderr.write(`[eddy] job '${result.jobName}' stopped\n`);
  process.stderr.write(runSummary({ result, checkpoints: execution.checkpoints(), restoredFrom: execution.restoredFrom }));
  // The job is over: a timer or promise user code left behind (in the job module, or inline) must
  // not run after the summary and print a stack with another exit code. stdout and stderr are
  // synchronous for files, pipes and terminals on Linux and macOS, so nothing written is lost.
  process.exit(0);
}

/**
 * Inline mode (`--inline`) runs user code on this thread, where what worker threads catch cannot
 * be caught per task: an error thrown from a callback of user code outside the job's functions (a
 * timer, a promise nobody awaits) cancels the job, and `error()` then says what happened, so the
 * run ends through the same path as any failure (control API closed, one line); and the heap is
 * watched, so that nearing V8's limit (which aborts the process) is said before it happens.
 */
function watchInlineUserCode(execution: () => JobExecution | undefined, logger: Logger): { error(): string | undefined } {
  let first: string | undefined;
  const uncaught = (kind: string) => (e: unknown) => {
    if (first !== undefined) return;
    first = `${kind} in user code outside the job's functions (inline mode): ${describeCause(e)}`;
    const running = execution();
    // Before the job exists (its module is being loaded) there is nothing to end but the process.
    if (running === undefined) fail(first);
    running.cancel();
  };
  process.on("uncaughtException", uncaught("an uncaught exception"));
  process.on("unhandledRejection", uncaught("an unhandled promise rejection"));
  let warned = false;
  const heap = setInterval(() => {
    const { used_heap_size: used, heap_size_limit: total } = getHeapStatistics();
    // heap_size_limit includes the young generation's reserve (3 × 16 MB semi-spaces on 64-bit
    // Node 20), which is never full when V8 gives up: what runs out is the old generation's share.
    // (Clamped to a third of the total for tiny heaps; a quarter put the warning at 92 of the 96
    // MB V8 dies at with --max-old-space-size=96, and it was missed about one run in four.)
    const limit = total - Math.min(YOUNG_GENERATION_RESERVE_BYTES, total / 3);
    if (warned || used < HEAP_WARNING_FRACTION * limit) return;
    warned = true;
    logger.warn(
      `the heap holds ${Math.round(used / 2 ** 20)} MB of its ${Math.round(limit / 2 ** 20)} MB limit: at the limit V8 aborts the process. ` +
        `Without --inline, the job runs on worker threads, where running out of memory fails the job with a message; or raise the limit (node --max-old-space-size)`,
      { job: execution()?.jobName },
    );
  }, HEAP_CHECK_INTERVAL_MS);
  heap.unref();
  return { error: () => first };
}


/** A parse error of `eddy run`'s flags, said in one line; an unknown option gets the closest known one. */
function usageError(e: Error & { code?: string }, options: Readonly<Record<string, unknown>>): string {
  const unknown = /^Unknown option '(-{1,2}[^']+)'/.exec(e.message)?.[1];
  if (e.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && unknown !== undefined) {
    const names = Object.keys(options).map((n) => `--${n}`);
    return `unknown option '${unknown}'${suggestion(unknown, names, "")} (see eddy --help)`;
  }
  return `${e.message.split("\n")[0]} (see eddy --help)`;
}

/** "; did you mean 'x'?" for the candidate closest to `word`, when one is close enough. */
function suggestion(word: string, candidates: readonly string[], none: string): string {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const d = editDistance(word, c);
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? `; did you mean '${best}'?` : none;
}

/** Levenshtein distance (insertions, deletions, substitutions). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** How often `eddy run` redraws its status line. */
const STATUS_INTERVAL_MS = 1_000;

/** The share of V8's heap limit at which inline mode warns (see watchInlineUserCode). */
const HEAP_WARNING_FRACTION = 0.85;
const YOUNG_GENERATION_RESERVE_BYTES = 48 * 2 ** 20;
/** How often inline mode looks at the heap: a job can fill the rest in well under a second. */
const HEAP_CHECK_INTERVAL_MS = 100;

await main(process.argv.slice(2));
