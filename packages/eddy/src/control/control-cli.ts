/**
 * `eddy list / savepoint / stop / cancel / query / ui`: the commands that control (or read from) a
 * running job through its control API (control-client.ts). `eddy query` reads through the control
 * API's read endpoint, so its key is parsed exactly as in the HTTP path (JSON if it parses, else a
 * string). Results go to stdout (a savepoint's path, the job table, a value);
 * failures are thrown as EddyError, a usage error with code "USAGE" (cli.ts exits 2 on it, 1 on
 * the others).
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { EddyError } from "../core/errors.ts";
import type { SavepointResult } from "../coordinator/control.ts";
import { connectJob, listJobs, type JobListing } from "./control-client.ts";
import { moveSavepoint } from "./move-savepoint.ts";
import { compactCount, compactDuration } from "./progress.ts";

export const CONTROL_COMMANDS = ["list", "savepoint", "stop", "cancel", "query", "ui"] as const;
export type ControlCommand = (typeof CONTROL_COMMANDS)[number];

export function isControlCommand(command: string): command is ControlCommand {
  return (CONTROL_COMMANDS as readonly string[]).includes(command);
}

export async function controlCommand(command: ControlCommand, argv: readonly string[]): Promise<void> {
  switch (command) {
    case "list": {
      const { values } = parse(argv, { json: { type: "boolean" }, all: { type: "boolean" } }, 0);
      const jobs = (await listJobs()).filter((j) => values.all === true || j.alive);
      process.stdout.write(values.json === true ? jobs.map((j) => JSON.stringify(j) + "\n").join("") : jobTable(jobs));
      return;
    }
    case "savepoint": {
      // `eddy savepoint inspect <dir>` is dispatched by bin/eddy.js to savepoint/inspect.ts (a
      // layer above this one); "inspect" is never taken for a job id.
      if (argv[0] === "inspect") throw usage("'eddy savepoint inspect' is run by the eddy command (bin/eddy.js)");
      const { values, positionals } = parse(argv, { dir: { type: "string" } }, 1);
      const job = await connectJob(positionals[0]!);
      await printSavepoint(await job.savepoint(), values.dir);
      return;
    }
    case "stop": {
      const { values, positionals } = parse(argv, { savepoint: { type: "boolean" }, drain: { type: "boolean" }, dir: { type: "string" } }, 1);
      const savepoint = values.savepoint === true;
      if (values.drain === true && !savepoint) throw usage("--drain needs --savepoint: eddy stop <jobId> --savepoint --drain");
      if (values.dir !== undefined && !savepoint) throw usage("--dir needs --savepoint: eddy stop <jobId> --savepoint --dir <dir>");
      const job = await connectJob(positionals[0]!);
      const result = await job.stop({ savepoint, drain: values.drain === true });
      if (result !== undefined) await printSavepoint(result, values.dir);
      return;
    }
    case "cancel": {
      const { positionals } = parse(argv, {}, 1);
      await (await connectJob(positionals[0]!)).cancel();
      return;
    }
    case "ui": {
      // The job id may be left out when exactly one job runs.
      const { positionals } = parse(argv, {}, argv.length === 0 ? 0 : 1);
      const id = positionals[0] ?? (await onlyRunningJob());
      const link = await (await connectJob(id)).loginLink();
      process.stdout.write(`${link.url}\n`);
      process.stderr.write(`[eddy] open this link in a browser within ${Math.round((link.expiresAtMs - Date.now()) / 1000)} s; it logs in once (run eddy ui again for another)\n`);
      return;
    }
    case "query": {
      const { values, positionals } = parse(argv, { json: { type: "boolean" } }, 3);
      const [jobId, name, key] = positionals as [string, string, string];
      const answer = await (await connectJob(jobId)).readState(name, key);
      // The value in the wire encoding (bigint, Map, Date, … as {"$bigint"}, {"$map"}, {"$date"}).
      const text = values.json === true ? JSON.stringify(answer) : answer.found ? JSON.stringify(answer.value) : "absent";
      process.stdout.write(text + "\n");
      return;
    }
  }
}

/** The id of the one running job; a usage error naming them when there are none or several. */
async function onlyRunningJob(): Promise<string> {
  const running = (await listJobs()).filter((j) => j.alive);
  if (running.length === 1) return running[0]!.id;
  throw usage(running.length === 0 ? "no jobs are running" : `several jobs are running, name one: eddy ui <jobId> (${running.map((j) => j.id).join(", ")})`);
}

/** Prints the savepoint's path; with `dir`, moves it there first and prints the new path. */
async function printSavepoint(result: SavepointResult, dir: string | undefined): Promise<void> {
  const path = dir === undefined ? result.path : await moveSavepoint(result.path, dir);
  process.stdout.write(path + "\n");
}

/** Options and exactly `count` positionals (none; a job id; or a job id, a state name and a key), else a usage error. */
function parse<O extends NonNullable<ParseArgsConfig["options"]>>(argv: readonly string[], options: O, count: 0 | 1 | 3) {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  } catch (e) {
    throw usage((e as Error).message);
  }
  if (parsed.positionals.length < count) throw usage(count === 3 ? "eddy query <jobId> <name> <key> needs all three (see 'eddy list')" : "a job id is needed (see 'eddy list')");
  if (parsed.positionals.length > count) throw usage(`unexpected arguments: ${parsed.positionals.slice(count).join(" ")}`);
  return parsed;
}

function usage(message: string): EddyError {
  return new EddyError("USAGE", message);
}

/**
 * The job table of `eddy list`: STATUS is the job's state ("restarting" between a failure and its
 * recovery); IN/S and OUT/S are records the sources emitted and the sinks took per second over
 * the last minute (Flink's meters); LAST CHECKPOINT is how long ago the newest one completed.
 */
export function jobTable(jobs: readonly JobListing[], nowMs = Date.now()): string {
  const rate = (n: number | null | undefined): string => (n === null || n === undefined ? "-" : compactCount(n));
  const lastCheckpoint = (j: JobListing): string => {
    const c = j.info?.checkpoints;
    if (c === undefined) return "-";
    if (c === null) return "off";
    const last = c.lastCompleted;
    if (last === null || last.durationMs === null) return "none yet";
    return `${compactDuration(Math.max(0, nowMs - last.triggerTimeMs - last.durationMs))} ago`;
  };
  const rows = [
    ["ID", "NAME", "STATUS", "IN/S", "OUT/S", "RESTARTS", "LAST CHECKPOINT", "PID", "STARTED"],
    ...jobs.map((j) => [
      j.id,
      j.name,
      j.info?.state ?? j.status,
      rate(j.info?.throughput?.recordsInPerSecond),
      rate(j.info?.throughput?.recordsOutPerSecond),
      j.info?.restarts === undefined ? "-" : String(j.info.restarts),
      lastCheckpoint(j),
      String(j.pid),
      new Date(j.startedAtMs).toISOString(),
    ]),
  ];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]!))).join("  ") + "\n").join("");
}
