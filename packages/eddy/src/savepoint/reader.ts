/**
 * Reads a savepoint (or a complete checkpoint: the directory has the same shape) without running
 * the job: what each operator held, cell by cell, its timers and its operator state. Layout and
 * rules: docs/design/savepoints.md.
 *
 * `openSavepoint` trusts nothing in the directory: the manifest is checked by `readManifest` (its
 * format, version and every field: manifest-validation.ts), and every file it lists is read and verified (a regular file in the
 * directory, not a link; size, before a byte is read; SHA-256; the container's CRC; its kind; and
 * that its sections are the ones the manifest describes) before the reader is returned. Cells are decoded lazily, when iterated; a cell that cannot be decoded,
 * or lies in a key group its key does not hash to, throws `CHECKPOINT_CORRUPT`.
 *
 * Cost: every task file is held in memory while the reader lives (a savepoint is read in full to
 * verify it anyway); iterating decodes one key group at a time.
 */
import { basename, join } from "node:path";
import { SnapshotFile, type SectionSource } from "../checkpoint/format/container.ts";
import { readFileIn, readManifestIn, snapshotDirectoryReader, type FileRef } from "../checkpoint/storage.ts";
import { manifestSharedFiles } from "../checkpoint/shared-state-registry.ts";
import { chainKeyGroupReader } from "../checkpoint/format/keyed-chain.ts";
import { manifestFiles, type CheckpointManifest } from "../checkpoint/format/manifest.ts";
import { readManifest } from "../checkpoint/format/manifest-reader.ts";
import { ByteReader } from "../core/codec/bytes.ts";
import { EddyError } from "../core/errors.ts";
import type { Key } from "../core/key.ts";
import { assignToKeyGroup } from "../core/key-group.ts";
import { decodeOperatorStates, keyedSection, operatorStateSection, type OperatorSnapshotMeta, type OperatorStateMode } from "../checkpoint/format/task-snapshot.ts";
import { readTimers, type RestoredTimer, type TimerDomain } from "../runtime/timer-service.ts";
import type { PersistedTtl, StateKind } from "../state/descriptors.ts";
import { readKeyGroup } from "../state/heap-snapshot.ts";
import type { KeyedStateMeta } from "../state/keyed-state-meta.ts";
import type { Namespace } from "../state/state-table.ts";

export interface KeyedStateInfo {
  readonly name: string;
  readonly kind: StateKind;
  /** The byte format of its cells (CELL_FORMAT). */
  readonly format: string;
  /** The schema the state declared, if any. */
  readonly codec: { readonly id: string; readonly version: number } | undefined;
  readonly ttl: PersistedTtl | undefined;
}

export interface OperatorStateInfo {
  readonly name: string;
  readonly mode: OperatorStateMode;
  /** Values over every old subtask. */
  readonly count: number;
}

/** One subtask of the run that wrote the savepoint. */
export interface SubtaskInfo {
  readonly subtask: number;
  /** Its key groups (inclusive), when the operator has keyed state. */
  readonly keyGroupRange: { readonly start: number; readonly end: number } | undefined;
  /** Its task file, or null when it had no bytes to write. */
  readonly file: string | null;
}

export interface OperatorInfo {
  readonly uid: string;
  readonly name: string;
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly keyedStates: readonly KeyedStateInfo[];
  readonly operatorStates: readonly OperatorStateInfo[];
  readonly hasTimers: boolean;
  /** The old subtasks that recorded anything for the operator, by subtask index. */
  readonly subtasks: readonly SubtaskInfo[];
  /** Bytes of the operator's sections (keyed state, timers and operator state) in all files. */
  readonly bytes: number;
}

/** One cell of keyed state. `value`: the value or accumulator; an array for list state; a Map for map state. */
export interface KeyedStateEntry {
  readonly state: string;
  readonly keyGroup: number;
  readonly key: Key;
  readonly namespace: Namespace;
  readonly value: unknown;
}

export interface TimerInfo {
  readonly domain: TimerDomain;
  readonly keyGroup: number;
  readonly key: Key;
  readonly namespace: string | number;
  readonly timestamp: number;
}

/** A verified savepoint. Never mutates the directory; may be used after the directory is gone. */
export interface SavepointReader {
  /** The directory, as given to `openSavepoint`. */
  readonly path: string;
  readonly manifest: CheckpointManifest;
  /** Every operator of the job that wrote it, in the manifest's order. */
  operators(): OperatorInfo[];
  /**
   * Every cell of the operator's keyed state (of state `stateName` only, when given), key group by
   * key group. Throws `UNKNOWN_OPERATOR` / `UNKNOWN_STATE` at once, naming what exists.
   */
  keyedState(uid: string, stateName?: string): IterableIterator<KeyedStateEntry>;
  /** Every pending timer of the operator, key group by key group, event time first in each. */
  timers(uid: string): IterableIterator<TimerInfo>;
  /** The values of operator state `name`, of every old subtask in subtask order. */
  operatorState(uid: string, name: string): unknown[];
  /**
   * Broadcast state `name` (a MapStateDescriptor's name) as each old subtask wrote it, in subtask
   * order: equal maps when the function changed it alike on every subtask, as it should. A restore
   * gives new subtask i the map of old subtask i mod the old parallelism.
   */
  broadcastState(uid: string, name: string): Map<unknown, unknown>[];
}

/** Opens and verifies the savepoint (or checkpoint) directory `path`. */
export async function openSavepoint(path: string): Promise<SavepointReader> {
  const where = `savepoint '${path}'`;
  const meta = await readManifestIn(path, `${where} (not a savepoint or complete checkpoint directory)`);
  const manifest = readManifest(meta, where);
  const files = new Map<string, SnapshotFile>();
  for (const ref of manifestFiles(manifest)) files.set(ref.name, await readTaskFile(path, ref));
  // An incremental checkpoint's keyed state is in the job's shared files (a savepoint lists none).
  const shared = new Map<string, SectionSource>();
  const reader = snapshotDirectoryReader(path);
  for (const ref of manifestSharedFiles(manifest)) shared.set(ref.name, await reader.openSharedFile(ref));
  return new VerifiedSavepoint(path, manifest, files, shared);
}

async function readTaskFile(dir: string, ref: FileRef): Promise<SnapshotFile> {
  return SnapshotFile.parse(await readFileIn(dir, ref), { fileName: join(dir, ref.name), expectKind: "task" });
}

/** What one old subtask recorded for one operator. */
interface Part {
  readonly subtask: number;
  readonly meta: OperatorSnapshotMeta;
  readonly file: SnapshotFile | undefined;
}

class VerifiedSavepoint implements SavepointReader {
  readonly path: string;
  readonly manifest: CheckpointManifest;
  readonly #where: string;
  /** Per operator uid, by old subtask index. */
  readonly #parts = new Map<string, Part[]>();
  readonly #hasTimers = new Map<string, boolean>();
  readonly #shared: ReadonlyMap<string, SectionSource>;

  constructor(path: string, manifest: CheckpointManifest, files: ReadonlyMap<string, SnapshotFile>, shared: ReadonlyMap<string, SectionSource>) {
    this.path = path;
    this.#shared = shared;
    this.manifest = manifest;
    this.#where = `savepoint '${path}'`;
    for (const task of manifest.tasks) {
      const file = task.file === null ? undefined : files.get(task.file.name);
      if (file !== undefined) this.#checkSections(file, task.chain, task.subtask, task.operators);
      for (const meta of task.operators) {
        let parts = this.#parts.get(meta.operatorId);
        if (parts === undefined) this.#parts.set(meta.operatorId, (parts = []));
        parts.push({ subtask: task.subtask, meta, file });
      }
    }
    for (const parts of this.#parts.values()) parts.sort((a, b) => a.subtask - b.subtask);
  }

  operators(): OperatorInfo[] {
    return Object.entries(this.manifest.operators).map(([uid, op]) => {
      const parts = this.#parts.get(uid) ?? [];
      const keyedStates = new Map<string, KeyedStateInfo>();
      const operatorStates = new Map<string, { name: string; mode: OperatorStateMode; count: number }>();
      let bytes = 0;
      for (const { meta, file } of parts) {
        for (const s of meta.keyed?.states ?? []) {
          keyedStates.set(s.name, { name: s.name, kind: s.kind, format: s.format, codec: s.codec, ttl: s.ttl });
        }
        for (const o of meta.operatorStates) {
          const entry = operatorStates.get(o.name);
          if (entry === undefined) operatorStates.set(o.name, { name: o.name, mode: o.mode, count: o.count });
          else entry.count += o.count;
        }
        for (const s of file?.sections ?? []) if (s.name === keyedSection(uid) || s.name === operatorStateSection(uid)) bytes += s.length;
      }
      return {
        uid,
        name: op.name,
        parallelism: op.parallelism,
        maxParallelism: op.maxParallelism,
        keyedStates: [...keyedStates.values()],
        operatorStates: [...operatorStates.values()],
        hasTimers: this.#operatorHasTimers(uid),
        subtasks: parts.map(({ subtask, meta, file }) => ({ subtask, keyGroupRange: meta.keyed?.keyGroupRange, file: file === undefined ? null : fileName(file) })),
        bytes,
      };
    });
  }

  keyedState(uid: string, stateName?: string): IterableIterator<KeyedStateEntry> {
    const parts = this.#operatorParts(uid);
    if (stateName !== undefined) {
      const names = new Set(parts.flatMap((p) => (p.meta.keyed?.states ?? []).map((s) => s.name)));
      if (!names.has(stateName)) {
        throw new EddyError("UNKNOWN_STATE", `${this.#where}: operator '${uid}' has no keyed state '${stateName}' (it has ${listOf(names)})`);
      }
    }
    return this.#keyedEntries(uid, parts, stateName);
  }

  *#keyedEntries(uid: string, parts: readonly Part[], stateName: string | undefined): Generator<KeyedStateEntry, void, undefined> {
    for (const group of this.#keyGroups(uid, parts)) {
      for (const cell of group.cells) if (stateName === undefined || cell.state === stateName) yield cell;
    }
  }

  timers(uid: string): IterableIterator<TimerInfo> {
    return this.#timerEntries(uid, this.#operatorParts(uid));
  }

  *#timerEntries(uid: string, parts: readonly Part[]): Generator<TimerInfo, void, undefined> {
    for (const group of this.#keyGroups(uid, parts)) {
      for (const t of group.timers) yield { domain: t.domain, keyGroup: t.keyGroup, key: t.key, namespace: t.namespace, timestamp: t.timestamp };
    }
  }

  operatorState(uid: string, name: string): unknown[] {
    return this.#operatorStatePerSubtask(uid, name).flat();
  }

  broadcastState(uid: string, name: string): Map<unknown, unknown>[] {
    const modes = new Set(this.#operatorParts(uid).flatMap((p) => p.meta.operatorStates.filter((o) => o.name === name).map((o) => o.mode)));
    if (modes.size > 0 && !modes.has("broadcast")) {
      throw new EddyError("UNKNOWN_STATE", `${this.#where}: operator state '${name}' of operator '${uid}' is ${[...modes].join("/")} list state, not broadcast state`);
    }
    return this.#operatorStatePerSubtask(uid, name).map((entries) => {
      const map = new Map<unknown, unknown>();
      for (const entry of entries) {
        if (!Array.isArray(entry) || entry.length !== 2) throw new EddyError("CHECKPOINT_CORRUPT", `${this.#where}: broadcast state '${name}' of operator '${uid}' holds an entry that is not a [key, value] pair`);
        map.set(entry[0], entry[1]);
      }
      return map;
    });
  }

  /** The values of operator state `name` per old subtask that recorded it, in subtask order. */
  #operatorStatePerSubtask(uid: string, name: string): unknown[][] {
    const parts = this.#operatorParts(uid);
    const names = new Set(parts.flatMap((p) => p.meta.operatorStates.map((o) => o.name)));
    if (!names.has(name)) {
      throw new EddyError("UNKNOWN_STATE", `${this.#where}: operator '${uid}' has no operator state '${name}' (it has ${listOf(names)})`);
    }
    const values: unknown[][] = [];
    for (const { meta, file } of parts) {
      const recorded = meta.operatorStates.find((o) => o.name === name);
      if (recorded === undefined || file === undefined) continue;
      const decoded = this.#decode(file, `the operator state of operator '${uid}'`, () => {
        // #checkSections made sure the section exists; decodeOperatorStates checks every count.
        const lists = decodeOperatorStates(file.section(operatorStateSection(uid))!, meta);
        return lists.get(name) ?? [];
      });
      values.push(decoded);
    }
    return values;
  }

  #operatorParts(uid: string): readonly Part[] {
    if (!Object.hasOwn(this.manifest.operators, uid)) {
      throw new EddyError("UNKNOWN_OPERATOR", `${this.#where} has no operator with uid '${uid}' (it has ${listOf(Object.keys(this.manifest.operators))})`);
    }
    return this.#parts.get(uid) ?? [];
  }

  #operatorHasTimers(uid: string): boolean {
    let has = this.#hasTimers.get(uid);
    if (has === undefined) {
      has = false;
      for (const group of this.#keyGroups(uid, this.#parts.get(uid) ?? [])) {
        if (group.timers.length > 0) {
          has = true;
          break;
        }
      }
      this.#hasTimers.set(uid, has);
    }
    return has;
  }

  /** Decodes the operator's key groups one at a time: the cells, then the timers (KeyedStateAndTimers's snapshot). */
  *#keyGroups(uid: string, parts: readonly Part[]): Generator<{ cells: KeyedStateEntry[]; timers: RestoredTimer[] }, void, undefined> {
    const maxParallelism = this.manifest.operators[uid]!.maxParallelism;
    for (const { meta, file } of parts) {
      const chain = meta.keyed?.incremental?.chain.map((ref) => this.#shared.get(ref.name)!);
      if (meta.keyed === undefined || (file === undefined && chain === undefined)) continue;
      const states = new Map<string, KeyedStateMeta>(meta.keyed.states.map((s) => [s.name, s]));
      for (let kg = meta.keyed.keyGroupRange.start; kg <= meta.keyed.keyGroupRange.end; kg++) {
        const bytes = file?.section(keyedSection(uid), kg);
        if (bytes === undefined && chain === undefined) continue;
        yield this.#decode(file ?? chain![0]!, `key group ${kg} of operator '${uid}'`, () => {
          // Incremental: the state from the chain, the timers from the task file (after its empty state part).
          const input =
            chain !== undefined
              ? chainKeyGroupReader(chain, kg, (name) => states.get(name), bytes?.subarray(1))
              : new ByteReader(bytes!.buffer as ArrayBuffer, bytes!.byteOffset, bytes!.byteOffset + bytes!.byteLength);
          const cells: KeyedStateEntry[] = [];
          readKeyGroup(
            input,
            (name) => states.get(name),
            (state, { key, namespace, cell }) => cells.push({ state: state.name, keyGroup: kg, key, namespace, value: cell.value }),
          );
          const timers: RestoredTimer[] = [];
          readTimers(kg, input, timers);
          if (input.remaining !== 0) throw new Error(`${input.remaining} bytes follow the timers`);
          // A cell in another key group than its key's would be restored by the wrong subtask.
          for (const { key } of [...cells, ...timers]) {
            const expected = assignToKeyGroup(key, maxParallelism);
            if (expected !== kg) throw new Error(`key ${describeKey(key)} belongs in key group ${expected}`);
          }
          return { cells, timers };
        });
      }
    }
  }

  /** Runs a decode step, turning any failure into CHECKPOINT_CORRUPT naming the file and `what`. */
  #decode<T>(file: SectionSource, what: string, step: () => T): T {
    try {
      return step();
    } catch (cause) {
      throw new EddyError("CHECKPOINT_CORRUPT", `${this.#where}: file '${fileName(file)}': ${what} cannot be read: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    }
  }

  /**
   * A task file holds exactly what the manifest says: the file's own meta names the same task and
   * checkpoint, keyed sections lie in the subtask's key-group range, and an operator with operator
   * state has its section.
   */
  #checkSections(file: SnapshotFile, chain: number, subtask: number, operators: readonly OperatorSnapshotMeta[]): void {
    const fail = (what: string): EddyError =>
      new EddyError("CHECKPOINT_CORRUPT", `${this.#where}: file '${fileName(file)}' ${what}`);
    const own = file.meta as { chain?: unknown; subtask?: unknown; checkpointId?: unknown } | null;
    if (own?.chain !== chain || own.subtask !== subtask || own.checkpointId !== this.manifest.checkpointId) {
      throw fail(`is not task ${chain}-${subtask} of checkpoint ${this.manifest.checkpointId}`);
    }
    const keyed = new Map<string, { start: number; end: number }>();
    const withOperatorState = new Set<string>();
    for (const m of operators) {
      if (m.keyed !== undefined) keyed.set(keyedSection(m.operatorId), m.keyed.keyGroupRange);
      if (m.operatorStates.length > 0) withOperatorState.add(operatorStateSection(m.operatorId));
    }
    for (const { name, keyGroup } of file.sections) {
      const range = keyed.get(name);
      if (range !== undefined && keyGroup !== undefined && keyGroup >= range.start && keyGroup <= range.end) continue;
      if (withOperatorState.has(name) && keyGroup === undefined) continue;
      throw fail(`has a section '${name}'${keyGroup === undefined ? "" : ` (key group ${keyGroup})`} that the manifest does not describe`);
    }
    for (const name of withOperatorState) {
      if (!file.sections.some((s) => s.name === name && s.keyGroup === undefined)) throw fail(`lacks section '${name}'`);
    }
  }
}

/** The file's name in the savepoint directory (SnapshotFile names it by its path). */
function fileName(file: SectionSource): string {
  return basename(file.fileName);
}

function listOf(names: Iterable<string>): string {
  const list = [...names].map((n) => `'${n}'`);
  return list.length === 0 ? "none" : list.join(", ");
}

function describeKey(key: Key): string {
  return typeof key === "bigint" ? `${key}n` : JSON.stringify(key, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v));
}
