/**
 * Deep validation of a checkpoint or savepoint manifest read from disk. A savepoint is a
 * directory a user hands us, so its manifest is hostile input: every field the restore and the
 * savepoint reader rely on is checked here, before any file it names is opened or any state it
 * describes is decoded. Checked (docs/design/savepoints.md,
 * "Validation: a savepoint is hostile input"; docs/design/checkpoint-files.md):
 *
 * - file names are one path segment (storage.ts `FILE_NAME`), so nothing outside the directory
 *   is ever read; sizes are safe non-negative integers; SHA-256 is 64 lowercase hex digits;
 * - tasks: chain and subtask are safe non-negative integers, (chain, subtask) and file names are
 *   unique, and a task whose operators have state has a file;
 * - operators: 1 ≤ parallelism ≤ maxParallelism ≤ 32768; every operator a task describes is listed;
 * - keyed state: each subtask's key-group range is integral and within [0, maxParallelism), and
 *   the ranges of one operator's subtasks do not overlap; each state has a known kind, a byte
 *   format this Eddy reads (else `CHECKPOINT_UNSUPPORTED`), a well-formed TTL and codec, and every
 *   subtask describes it the same way;
 * - operator state: modes are "split", "union" or "broadcast", counts are safe non-negative integers, and a
 *   task's counts add up to no more than its file's bytes (every value encodes to a byte or more);
 * - file sizes are at most MAX_SNAPSHOT_FILE_BYTES for task files, the most a reader takes into memory
 *   (shared files of incremental chains are read section by section: any safe integer).
 *
 * Depth and size of the manifest as a whole are bounded before it is parsed (container.ts:
 * MAX_HEADER_DEPTH, MAX_HEADER_BYTES), so nothing here, nor any recursive walk after it, meets a
 * manifest nested deep enough to overflow the stack.
 *
 * Format and version are `readManifest`'s (manifest.ts): its reader of version 1 calls this, since
 * a manifest of another version may have another shape.
 */
import { FILE_NAME } from "../storage.ts";
import { MAX_SNAPSHOT_FILE_BYTES } from "../untrusted-file.ts";
import { EddyError } from "../../core/errors.ts";
import { MAX_MAX_PARALLELISM } from "../../core/key-group.ts";
import type { StateKind } from "../../state/descriptors.ts";
import { CELL_FORMAT } from "../../state/keyed-state-meta.ts";
import type { CheckpointManifest } from "./manifest.ts";
import type { OperatorStateMode } from "./task-snapshot.ts";

/** Cell formats this Eddy decodes; a new format adds its id here and a reader in state/. */
/**
 * "eddy.default/1" and "/2" are "eddy.default/3" without the groups added since (/2 added lists,
 * /3 maps and int32s): the same decoder reads all three.
 */
const READABLE_CELL_FORMATS: readonly string[] = [CELL_FORMAT, "eddy.default/2", "eddy.default/1"];
/** Exhaustive: a new StateKind does not compile until it is listed here. */
const STATE_KINDS: Readonly<Record<StateKind, true>> = { value: true, list: true, map: true, reducing: true, aggregating: true };
const TTL_UPDATE_TYPES = ["onCreateAndWrite", "onReadAndWrite"];
/** Exhaustive, as STATE_KINDS. */
const OPERATOR_STATE_MODES: Readonly<Record<OperatorStateMode, true>> = { split: true, union: true, broadcast: true };
const SHA256 = /^[0-9a-f]{64}$/;
/** The longest codec id a state descriptor accepts (descriptors.ts). */
const MAX_CODEC_ID_LENGTH = 200;

/**
 * Throws `CHECKPOINT_CORRUPT` (or `CHECKPOINT_UNSUPPORTED` for a cell format this Eddy cannot
 * read) unless `manifest` is well formed. `where` names the checkpoint or savepoint in every
 * message, e.g. `savepoint '/backups/sp-1'`. The argument is typed as a manifest but trusted in
 * nothing beyond what `readManifest` checked.
 */
export function validateManifest(manifest: CheckpointManifest, where: string): void {
  const corrupt = (what: string): EddyError =>
    new EddyError("CHECKPOINT_CORRUPT", `${where}: ${what}`);
  const m: unknown = manifest;
  if (!isRecord(m)) throw corrupt("the manifest is not a JSON object");
  for (const field of ["jobId", "jobName"] as const) {
    if (typeof m[field] !== "string") throw corrupt(`manifest field '${field}' must be a string, got ${show(m[field])}`);
  }
  for (const field of ["checkpointId", "generation"] as const) {
    if (!isIndex(m[field])) throw corrupt(`manifest field '${field}' must be a non-negative integer, got ${show(m[field])}`);
  }
  for (const field of ["isSavepoint", "isFinal"] as const) {
    if (typeof m[field] !== "boolean") throw corrupt(`manifest field '${field}' must be a boolean, got ${show(m[field])}`);
  }
  for (const field of ["triggeredAtMs", "completedAtMs"] as const) {
    const t = m[field];
    if (!(typeof t === "number" && Number.isFinite(t) && t >= 0)) throw corrupt(`manifest field '${field}' must be a time in ms, got ${show(t)}`);
  }
  if (!isRecord(m["enumerators"])) throw corrupt(`manifest field 'enumerators' must be an object, got ${show(m["enumerators"])}`);
  const operators = m["operators"];
  if (!isRecord(operators)) throw corrupt(`manifest field 'operators' must be an object, got ${show(operators)}`);
  for (const [uid, op] of Object.entries(operators)) validateOperator(uid, op, corrupt);
  const tasks = m["tasks"];
  if (!Array.isArray(tasks)) throw corrupt(`manifest field 'tasks' must be an array, got ${show(tasks)}`);
  const checker = new OperatorStateChecker(operators as CheckpointManifest["operators"], where, corrupt, m["isSavepoint"] === true);
  const taskIds = new Set<string>();
  const fileNames = new Set<string>();
  tasks.forEach((task: unknown, i) => {
    if (!isRecord(task)) throw corrupt(`task entry ${i} is not an object`);
    const { chain, subtask, file } = task;
    if (typeof task["taskId"] !== "string") throw corrupt(`task entry ${i} has no task id`);
    if (!isIndex(chain) || !isIndex(subtask)) throw corrupt(`task entry ${i} has an invalid chain ${show(chain)} or subtask ${show(subtask)}`);
    const task$ = `task ${chain}-${subtask}`;
    if (taskIds.has(task$)) throw corrupt(`${task$} is listed twice`);
    taskIds.add(task$);
    if (file !== null) {
      validateFileRef(file, task$, corrupt);
      if (fileNames.has(file.name)) throw corrupt(`file '${file.name}' is listed by two tasks`);
      fileNames.add(file.name);
    }
    if (!Array.isArray(task["operators"])) throw corrupt(`${task$} has no operator list`);
    const seen = new Set<string>();
    let values = 0;
    for (const meta of task["operators"] as unknown[]) {
      const operatorId = checker.check(meta, subtask, task$);
      if (seen.has(operatorId)) throw corrupt(`${task$} describes operator '${operatorId}' twice`);
      seen.add(operatorId);
      // Keyed state with no cells has no section; operator state always has one.
      const { operatorStates } = meta as TaskOperatorMeta;
      if (file === null && operatorStates.length > 0) throw corrupt(`${task$} has operator state of '${operatorId}' but no file`);
      for (const s of operatorStates) values += s.count;
    }
    // Each value encodes to a tag byte at least (value-codec.ts): a count the file cannot hold is a lie.
    if (file !== null && values > file.size) {
      throw corrupt(`${task$} counts ${values} operator-state values, more than the ${file.size} bytes of its file '${file.name}' could hold`);
    }
  });
  checker.checkRangesDisjoint();
}

function validateOperator(uid: string, op: unknown, corrupt: (what: string) => EddyError): void {
  if (uid === "") throw corrupt("an operator has an empty uid");
  if (!isRecord(op) || typeof op["name"] !== "string") throw corrupt(`operator '${uid}' has a malformed entry ${show(op)}`);
  const { parallelism, maxParallelism } = op;
  if (!isIndex(maxParallelism) || maxParallelism < 1 || maxParallelism > MAX_MAX_PARALLELISM) {
    throw corrupt(`operator '${uid}' has max parallelism ${show(maxParallelism)}, not an integer in [1, ${MAX_MAX_PARALLELISM}]`);
  }
  if (!isIndex(parallelism) || parallelism < 1 || parallelism > maxParallelism) {
    throw corrupt(`operator '${uid}' has parallelism ${show(parallelism)}, not an integer in [1, ${maxParallelism}] (its max parallelism)`);
  }
}

/** `maxSize`: a task file is read whole (MAX_SNAPSHOT_FILE_BYTES); a shared file section by section (any safe integer). */
function validateFileRef(file: unknown, task: string, corrupt: (what: string) => EddyError, maxSize = MAX_SNAPSHOT_FILE_BYTES): asserts file is { name: string; size: number; sha256: string } {
  if (!isRecord(file)) throw corrupt(`${task} has a malformed file entry ${show(file)}`);
  const { name, size, sha256 } = file;
  if (typeof name !== "string" || !FILE_NAME.test(name)) {
    throw corrupt(`${task} names file ${show(name)}, which is not a plain file name in the directory (must match ${FILE_NAME.source})`);
  }
  if (!isIndex(size)) throw corrupt(`file '${name}' has an invalid size ${show(size)}`);
  if (size > maxSize) throw corrupt(`file '${name}' has ${size} bytes, more than the ${maxSize} a snapshot file may have`);
  if (typeof sha256 !== "string" || !SHA256.test(sha256)) throw corrupt(`file '${name}' has an invalid sha256 ${show(sha256)} (needs 64 hex digits)`);
  const { indexSha256 } = file;
  if (indexSha256 !== undefined && (typeof indexSha256 !== "string" || !SHA256.test(indexSha256))) {
    throw corrupt(`file '${name}' has an invalid indexSha256 ${show(indexSha256)} (needs 64 hex digits)`);
  }
}

/** A task's operator meta as far as `check` validated it (OperatorSnapshotMeta, runtime/checkpointing.ts). */
interface TaskOperatorMeta {
  readonly operatorStates: readonly { readonly count: number }[];
}

/** Checks each task's operator metas, and what must agree between the subtasks of one operator. */
class OperatorStateChecker {
  readonly #operators: CheckpointManifest["operators"];
  readonly #where: string;
  readonly #corrupt: (what: string) => EddyError;
  /** Per operator: each subtask's key-group range, for the overlap check. */
  readonly #ranges = new Map<string, { subtask: number; start: number; end: number }[]>();
  /** Per operator and state name: the description first seen, to compare the others with. */
  readonly #descriptions = new Map<string, string>();

  /** Savepoints are self-contained: an incremental chain (shared files) is refused. */
  readonly #isSavepoint: boolean;

  constructor(operators: CheckpointManifest["operators"], where: string, corrupt: (what: string) => EddyError, isSavepoint: boolean) {
    this.#isSavepoint = isSavepoint;
    this.#operators = operators;
    this.#where = where;
    this.#corrupt = corrupt;
  }

  /** Validates one task's meta of one operator; returns the operator id. */
  check(meta: unknown, subtask: number, task: string): string {
    const corrupt = this.#corrupt;
    if (!isRecord(meta) || typeof meta["operatorId"] !== "string" || typeof meta["operatorName"] !== "string") {
      throw corrupt(`${task} has a malformed operator entry ${show(meta)}`);
    }
    const uid = meta["operatorId"];
    const op = `operator '${uid}'`;
    // Own properties only: a uid like "constructor" must not find Object.prototype's.
    if (!Object.hasOwn(this.#operators, uid)) throw corrupt(`${task} describes ${op}, which the manifest's operators do not list`);
    const { parallelism, maxParallelism } = this.#operators[uid]!;
    if (subtask >= parallelism) throw corrupt(`${task} is subtask ${subtask} of ${op}, which ran at parallelism ${parallelism}`);
    if (meta["keyed"] !== undefined) this.#checkKeyed(meta["keyed"], uid, subtask, maxParallelism, task);
    const states = meta["operatorStates"];
    if (!Array.isArray(states)) throw corrupt(`${task} has no operator state list for ${op}`);
    const names = new Set<string>();
    for (const s of states as unknown[]) {
      if (!isRecord(s) || typeof s["name"] !== "string" || !isIndex(s["count"])) throw corrupt(`${op} has a malformed operator state entry ${show(s)}`);
      const state = `operator state '${s["name"]}' of ${op}`;
      if (typeof s["mode"] !== "string" || !Object.hasOwn(OPERATOR_STATE_MODES, s["mode"])) throw corrupt(`${state} has mode ${show(s["mode"])}, expected "split", "union" or "broadcast"`);
      if (names.has(s["name"])) throw corrupt(`${state} is described twice in ${task}`);
      names.add(s["name"]);
      this.#agree(uid, `op:${s["name"]}`, String(s["mode"]), state);
    }
    return uid;
  }

  #checkKeyed(keyed: unknown, uid: string, subtask: number, maxParallelism: number, task: string): void {
    const corrupt = this.#corrupt;
    const op = `operator '${uid}'`;
    if (!isRecord(keyed) || !isRecord(keyed["keyGroupRange"]) || !Array.isArray(keyed["states"])) throw corrupt(`${task} has malformed keyed state for ${op}`);
    const { start, end } = keyed["keyGroupRange"];
    if (!isIndex(start) || !isIndex(end) || start > end || end >= maxParallelism) {
      throw corrupt(`${op} subtask ${subtask} has key-group range [${show(start)}, ${show(end)}], not within [0, ${maxParallelism - 1}] (max parallelism ${maxParallelism})`);
    }
    let ranges = this.#ranges.get(uid);
    if (ranges === undefined) this.#ranges.set(uid, (ranges = []));
    ranges.push({ subtask, start, end });
    const watermark = keyed["watermark"];
    if (!(watermark === null || (typeof watermark === "number" && !Number.isNaN(watermark)))) throw corrupt(`${op} has an invalid watermark ${show(watermark)}`);
    const names = new Set<string>();
    for (const s of keyed["states"] as unknown[]) this.#checkKeyedState(s, uid, names, task);
    const incremental = keyed["incremental"];
    if (incremental !== undefined) {
      // The chain of shared files (state/incremental-snapshot.ts): a base, then deltas.
      if (this.#isSavepoint) throw corrupt(`${task} lists shared files for ${op}, but a savepoint is self-contained (only checkpoints are incremental)`);
      if (!isRecord(incremental) || !Array.isArray(incremental["chain"]) || incremental["chain"].length === 0) throw corrupt(`${task} has a malformed incremental chain for ${op}`);
      for (const ref of incremental["chain"] as unknown[]) validateFileRef(ref, task, corrupt, Number.MAX_SAFE_INTEGER);
    }
  }

  /** `names`: the states of this task seen so far. */
  #checkKeyedState(s: unknown, uid: string, names: Set<string>, task: string): void {
    const corrupt = this.#corrupt;
    const op = `operator '${uid}'`;
    if (!isRecord(s) || typeof s["name"] !== "string" || s["name"] === "") throw corrupt(`${op} has a malformed keyed state entry ${show(s)}`);
    const state = `state '${s["name"]}' of ${op}`;
    if (names.has(s["name"])) throw corrupt(`${state} is described twice in ${task}`);
    names.add(s["name"]);
    const { kind, format, ttl, codec, copy } = s;
    if (typeof format !== "string") throw corrupt(`${state} has no cell format`);
    if (!READABLE_CELL_FORMATS.includes(format)) {
      throw new EddyError(
        "CHECKPOINT_UNSUPPORTED",
        `${this.#where}: ${state} is written in format '${format}', which this Eddy cannot read (it reads ${READABLE_CELL_FORMATS.join(", ")})`,
      );
    }
    if (typeof kind !== "string" || !Object.hasOwn(STATE_KINDS, kind)) throw corrupt(`${state} has unknown kind ${show(kind)}`);
    if (copy !== "deep" && copy !== "none") throw corrupt(`${state} has an invalid copy mode ${show(copy)}`);
    if (ttl !== undefined) {
      const valid = isRecord(ttl) && typeof ttl["ttlMs"] === "number" && ttl["ttlMs"] > 0 && Number.isFinite(ttl["ttlMs"]) && TTL_UPDATE_TYPES.includes(ttl["updateType"] as string);
      if (!valid) throw corrupt(`${state} has a malformed TTL ${show(ttl)}`);
    }
    if (codec !== undefined) {
      const valid =
        isRecord(codec) &&
        typeof codec["id"] === "string" &&
        codec["id"].trim() !== "" &&
        codec["id"].length <= MAX_CODEC_ID_LENGTH &&
        isIndex(codec["version"]) &&
        codec["version"] >= 1;
      if (!valid) throw corrupt(`${state} has a malformed codec ${show(codec)} (needs a non-empty id and a positive integer version)`);
    }
    this.#agree(uid, `keyed:${s["name"]}`, JSON.stringify([kind, format, ttl ?? null, codec ?? null]), state);
  }

  /** Every subtask must describe a state the same way. */
  #agree(uid: string, id: string, description: string, state: string): void {
    const key = JSON.stringify([uid, id]);
    const first = this.#descriptions.get(key);
    if (first === undefined) this.#descriptions.set(key, description);
    else if (first !== description) throw this.#corrupt(`the subtasks describe ${state} differently`);
  }

  checkRangesDisjoint(): void {
    for (const [uid, ranges] of this.#ranges) {
      const sorted = [...ranges].sort((a, b) => a.start - b.start);
      for (let i = 1; i < sorted.length; i++) {
        const a = sorted[i - 1]!;
        const b = sorted[i]!;
        if (b.start <= a.end) {
          throw this.#corrupt(
            `operator '${uid}' subtasks ${a.subtask} and ${b.subtask} have overlapping key-group ranges [${a.start}, ${a.end}] and [${b.start}, ${b.end}]`,
          );
        }
      }
    }
  }
}

function isIndex(x: unknown): x is number {
  return typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

/** A value for a message: short, and never more than a line. */
function show(x: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(x) ?? String(x);
  } catch {
    s = String(x);
  }
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
