/**
 * `eddy savepoint inspect <path> [--json]`: what a savepoint holds, for people (text) and tools
 * (one JSON document). Counting entries and timers decodes every cell, so the command's cost is
 * that of reading the whole savepoint once.
 */
import { parseArgs } from "node:util";
import { describeCause } from "../core/errors.ts";
import { openSavepoint, type OperatorInfo, type SavepointReader } from "./reader.ts";

export interface InspectOptions {
  /** One JSON document instead of text. */
  readonly json?: boolean;
}

/** Where the command writes; each call is one chunk of text (ends with a newline). */
export interface CommandIo {
  stdout(s: string): void;
  stderr(s: string): void;
}

const USAGE = `Usage: eddy savepoint inspect <path> [--json]

Prints what the savepoint (or complete checkpoint) directory <path> holds: the checkpoint it
came from and, per operator, its states, timers, operator state, key-group ranges and bytes.
Every file is verified first. --json prints one JSON document instead.
`;

/** What `inspect` reports about one operator (the JSON document's `operators[i]`). */
interface OperatorReport extends Omit<OperatorInfo, "keyedStates" | "hasTimers"> {
  readonly keyedStates: readonly (OperatorInfo["keyedStates"][number] & { readonly entries: number })[];
  readonly timers: number;
}

/** The report on the savepoint at `path`, as text or (with `json`) one JSON document. */
export async function inspectSavepoint(path: string, options: InspectOptions = {}): Promise<string> {
  const reader = await openSavepoint(path);
  const m = reader.manifest;
  const report = {
    path,
    job: { id: m.jobId, name: m.jobName },
    checkpoint: {
      id: m.checkpointId,
      isSavepoint: m.isSavepoint,
      isFinal: m.isFinal,
      generation: m.generation,
      triggeredAtMs: m.triggeredAtMs,
      completedAtMs: m.completedAtMs,
    },
    operators: reader.operators().map((op) => operatorReport(reader, op)),
  };
  if (options.json === true) return JSON.stringify(report, null, 2) + "\n";
  const c = report.checkpoint;
  const lines = [
    `${c.isSavepoint ? "Savepoint" : "Checkpoint"} ${path}`,
    `  job          ${m.jobName} (id ${m.jobId})`,
    `  checkpoint   ${c.id}${c.isSavepoint ? ", savepoint" : ""}${c.isFinal ? ", final" : ""}, generation ${c.generation}`,
    `  triggered    ${isoTime(c.triggeredAtMs)}`,
    `  completed    ${isoTime(c.completedAtMs)} (${c.completedAtMs - c.triggeredAtMs} ms later)`,
  ];
  for (const op of report.operators) lines.push("", ...operatorText(op));
  return lines.join("\n") + "\n";
}

function operatorReport(reader: SavepointReader, op: OperatorInfo): OperatorReport {
  const entries = new Map<string, number>();
  for (const cell of reader.keyedState(op.uid)) entries.set(cell.state, (entries.get(cell.state) ?? 0) + 1);
  let timers = 0;
  if (op.hasTimers) for (const _ of reader.timers(op.uid)) timers++;
  const { hasTimers: _hasTimers, keyedStates, ...rest } = op;
  return { ...rest, keyedStates: keyedStates.map((s) => ({ ...s, entries: entries.get(s.name) ?? 0 })), timers };
}

function operatorText(op: OperatorReport): string[] {
  const lines = [
    `Operator ${op.uid} (${op.name})`,
    `  parallelism ${op.parallelism}, max parallelism ${op.maxParallelism}, ${op.bytes} bytes`,
  ];
  if (op.keyedStates.length === 0 && op.operatorStates.length === 0) lines.push("  no state");
  for (const s of op.keyedStates) {
    const codec = s.codec === undefined ? "no codec" : `codec ${s.codec.id} v${s.codec.version}`;
    const ttl = s.ttl === undefined ? "" : `, ttl ${s.ttl.ttlMs} ms`;
    lines.push(`  keyed state '${s.name}': ${s.kind}, ${codec}, format ${s.format}${ttl}, ${s.entries} entries`);
  }
  if (op.keyedStates.length > 0 || op.timers > 0) lines.push(`  timers: ${op.timers}`);
  for (const o of op.operatorStates) lines.push(`  operator state '${o.name}': ${o.mode}, ${o.count} values`);
  for (const t of op.subtasks) {
    const range = t.keyGroupRange === undefined ? "no keyed state" : `key groups ${t.keyGroupRange.start}-${t.keyGroupRange.end}`;
    lines.push(`  subtask ${t.subtask}: ${range}, file ${t.file ?? "none"}`);
  }
  return lines;
}

function isoTime(ms: number): string {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString();
}

/**
 * The command, given the arguments after `eddy savepoint inspect`. Returns the exit code: 0 ok,
 * 1 when the savepoint is missing, corrupt, unsupported or unreadable (`eddy: <message>` on
 * stderr), 2 for a usage error.
 */
export async function runInspectCommand(argv: string[], io: CommandIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { json: { type: "boolean" }, help: { type: "boolean", short: "h" } } });
  } catch (e) {
    io.stderr(`eddy: ${describeCause(e).replace(/^\w*Error: /, "")}\n${USAGE}`);
    return 2;
  }
  if (parsed.values.help === true) {
    io.stdout(USAGE);
    return 0;
  }
  if (parsed.positionals.length !== 1) {
    io.stderr(`eddy: savepoint inspect needs exactly one <path>, got ${parsed.positionals.length}\n${USAGE}`);
    return 2;
  }
  try {
    io.stdout(await inspectSavepoint(parsed.positionals[0]!, { json: parsed.values.json === true }));
    return 0;
  } catch (e) {
    io.stderr(`eddy: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
}
