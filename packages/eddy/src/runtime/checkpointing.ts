/**
 * What an operator instance contributes to a checkpoint, and what it gets back on restore.
 *
 * Each operator subtask has one `OperatorCheckpointing`, created by the executor and reachable
 * through its context. Parts register with it instead of every operator implementing snapshot
 * hooks: keyed operators' `KeyedStateAndTimers` registers the keyed state backend and timers; sources
 * and sinks register operator (non-keyed) list state and checkpoint listeners.
 *
 * A snapshot has two parts (docs/design/checkpoint-protocol.md, "Wiring"): `snapshot()` runs
 * synchronously between two records on the task thread and only freezes what is there
 * (copy-on-write; O(key groups) for keyed state); `taskSnapshotSections` turns the frozen parts into
 * bytes later, yielding to the event loop while the task goes on processing.
 */
import { BufferPool, ByteReader, ByteWriter } from "../core/codec/bytes.ts";
import { encodeValue } from "../core/codec/value-codec.ts";
import { EddyError } from "../core/errors.ts";
import {
  keyedSection,
  operatorStateSection,
  decodeOperatorStates,
  type OperatorSnapshotMeta,
  type OperatorStateMode,
  type TaskSnapshotSection,
} from "../checkpoint/format/task-snapshot.ts";
import type { KeyedStateMeta } from "../state/keyed-state-meta.ts";
import type { SharedFileRef, SharedKeyedSnapshot } from "../state/incremental-snapshot.ts";
import type { KeyedSnapshotOptions, KeyGroupCells } from "../state/keyed-state-backend.ts";
import type { CheckpointStorage, FileRef } from "../checkpoint/storage.ts";
import { encodeSnapshotFileStream } from "../checkpoint/format/container.ts";
import { SHARED_KEYED_SECTION } from "../checkpoint/format/keyed-chain.ts";
import { SHARED_TIMERS_SECTION } from "../checkpoint/format/timers.ts";

/** The frozen keyed state and timers of one operator subtask. */
export interface KeyedSnapshotPart {
  readonly keyGroupRange: { readonly start: number; readonly end: number };
  readonly states: readonly KeyedStateMeta[];
  /** The operator's event time when the snapshot was taken (restored so late data stays late). */
  readonly watermark: number;
  hasKeyGroup(keyGroup: number): boolean;
  writeKeyGroup(keyGroup: number, out: ByteWriter): void;
  /** Key group `keyGroup` is written and will not be read again: its copy-on-write view ends. */
  releaseKeyGroup(keyGroup: number): void;
  /** Ends the copy-on-write view; idempotent. */
  release(): void;
  /**
   * An incremental snapshot's state (state/incremental-snapshot.ts), written to a shared file
   * before `release`, with the timers (`writeSharedTimers`); the task file then has no key-group
   * sections (`hasKeyGroup` is false for every group).
   */
  readonly shared?: SharedKeyedSnapshot;
  /**
   * With `shared`: writes the shared file's `timers` section of `keyGroup`
   * (checkpoint/format/timers.ts: in a base every timer of the group, in a delta the keys whose
   * timers changed) and returns true, or writes nothing and returns false when the group has
   * none for it. Before `releaseKeyGroup` of the group.
   */
  writeSharedTimers?(keyGroup: number, out: ByteWriter): boolean;
}

/**
 * Operator list state: `split` values are divided among subtasks when the parallelism changes
 * (source splits); `union` values are given to every subtask.
 */

export interface OperatorStateSnapshot {
  readonly name: string;
  readonly mode: OperatorStateMode;
  /**
   * The values at the barrier, or a promise of them: a sink's committables may be known only once
   * its writes are durable (SinkWriter.prepareCommit). The asynchronous part awaits them; the
   * checkpoint is acknowledged only after.
   */
  readonly values: readonly unknown[] | PromiseLike<readonly unknown[]>;
}

/** Hears about the fate of checkpoints this operator took part in (sinks commit here). */
export interface CheckpointListener {
  notifyCheckpointComplete?(checkpointId: number): void;
  notifyCheckpointAborted?(checkpointId: number): void;
}

/** What one operator subtask gets back from a checkpoint. */
export interface OperatorRestore {
  readonly checkpointId: number;
  /** Keyed state and timers of the key groups this subtask owns, if the operator had any. */
  readonly keyed: RestoredKeyed | undefined;
  /** Operator list state by name, already divided for this subtask (undefined: none recorded). */
  operatorState(name: string): readonly unknown[] | undefined;
  /** Names of the operator list states recorded. */
  readonly operatorStateNames: readonly string[];
}

export interface RestoredKeyed {
  readonly states: readonly KeyedStateMeta[];
  readonly watermark: number;
  /** The bytes of `keyGroup` written by `KeyedSnapshotPart.writeKeyGroup`, or undefined when empty. */
  keyGroup(keyGroup: number): ByteReader | undefined;
  /**
   * Optional, preferred when given: `keyGroup`'s state as decoded cells (restored with
   * `restoreKeyGroupCells`: an incremental chain is decoded once, never re-encoded) and `rest`,
   * the bytes after the state part (the timers); undefined when the group is empty.
   */
  keyGroupCells?(keyGroup: number): { readonly cells: KeyGroupCells | undefined; readonly rest: ByteReader } | undefined;
  /**
   * Given when one old subtask of the same key-group range wrote the state as an incremental
   * chain: the checkpoint and that chain (a backend may restore it from what it kept locally:
   * KeyedStateBackend.restoreLocally), and the timers of a key group without its state.
   */
  readonly local?: {
    readonly checkpointId: number;
    readonly chain: readonly SharedFileRef[];
    timers(keyGroup: number): ByteReader | undefined;
  };
}

/** The synchronous snapshot of one operator subtask. */
export interface OperatorSnapshot {
  readonly operatorId: string;
  readonly operatorName: string;
  readonly keyed: KeyedSnapshotPart | undefined;
  readonly operatorStates: readonly OperatorStateSnapshot[];
}

/** What an operator state gives at a barrier: its values, or a promise of them. */
export type OperatorStateSnapshotFn = (checkpointId: number) => readonly unknown[] | PromiseLike<readonly unknown[]>;

export class OperatorCheckpointing {
  readonly operatorId: string;
  readonly operatorName: string;
  readonly restored: OperatorRestore | undefined;
  #keyed: ((options: KeyedSnapshotOptions) => KeyedSnapshotPart) | undefined;
  readonly #operatorStates = new Map<string, { mode: OperatorStateMode; snapshot: OperatorStateSnapshotFn }>();
  readonly #listeners: CheckpointListener[] = [];
  readonly #beforeBarrier: (() => void)[] = [];

  constructor(operatorId: string, operatorName: string, restored: OperatorRestore | undefined) {
    this.operatorId = operatorId;
    this.operatorName = operatorName;
    this.restored = restored;
  }

  /** Registers the keyed state of the operator (one per operator). */
  setKeyed(snapshot: (options: KeyedSnapshotOptions) => KeyedSnapshotPart): void {
    if (this.#keyed !== undefined) {
      throw new EddyError("DUPLICATE_KEYED_STATE", `operator '${this.operatorName}' registered keyed state twice`);
    }
    this.#keyed = snapshot;
  }

  /**
   * Registers operator list state `name`; `snapshot` returns its values at a barrier (they are
   * encoded later, so it must return values it will not mutate), or a promise of them, which the
   * asynchronous part awaits (it is called synchronously at the barrier, so what happens after
   * the call belongs to the next checkpoint). Returns the restored values.
   */
  registerOperatorState(name: string, mode: OperatorStateMode, snapshot: OperatorStateSnapshotFn): readonly unknown[] | undefined {
    if (this.#operatorStates.has(name)) {
      throw new EddyError("DUPLICATE_OPERATOR_STATE", `operator '${this.operatorName}' registered operator state '${name}' twice`);
    }
    this.#operatorStates.set(name, { mode, snapshot });
    return this.restored?.operatorState(name);
  }

  /**
   * Restored state that no part of the operator took back (checked once the operator is open):
   * keyed state of an operator that is no longer keyed, operator list states nobody registered.
   * Such state would be missing from every later snapshot.
   */
  unclaimedRestoredState(): string[] {
    const restored = this.restored;
    if (restored === undefined) return [];
    const out: string[] = [];
    if (restored.keyed !== undefined && this.#keyed === undefined) out.push(`keyed state (${restored.keyed.states.map((s) => s.name).join(", ") || "timers"})`);
    for (const name of restored.operatorStateNames) if (!this.#operatorStates.has(name)) out.push(`operator state '${name}'`);
    return out;
  }

  /**
   * Registers `action` to run at every barrier before anything is snapshotted (Flink's
   * prepareSnapshotPreBarrier): what it emits reaches the operators chained behind this one before
   * they snapshot (the task snapshots a chain head first), and the channels before the barrier.
   * For operators that hold records back but keep no state (local window aggregation flushes).
   */
  beforeBarrier(action: () => void): void {
    this.#beforeBarrier.push(action);
  }

  addListener(listener: CheckpointListener): void {
    this.#listeners.push(listener);
  }

  get hasState(): boolean {
    return this.#keyed !== undefined || this.#operatorStates.size > 0;
  }

  /**
   * The synchronous part; the caller releases `keyed` when the bytes are written (or on failure).
   * `withKeyed: false` leaves keyed state out (the final checkpoint of a finished job: no input
   * follows, so only what sinks and sources hold matters).
   */
  snapshot(checkpointId: number, withKeyed = true, incremental = false): OperatorSnapshot {
    for (const action of this.#beforeBarrier) action();
    const operatorStates: OperatorStateSnapshot[] = [];
    for (const [name, { mode, snapshot }] of this.#operatorStates) {
      const values = snapshot(checkpointId);
      // Awaited by the asynchronous part, which may fail before it gets there (then nothing awaits
      // it): handled here too, so a rejection (a sink's failed write) never crashes the thread as
      // an unhandled one; the asynchronous part still sees it when it awaits.
      if (!Array.isArray(values)) Promise.resolve(values).catch(() => {});
      operatorStates.push({ name, mode, values });
    }
    return { operatorId: this.operatorId, operatorName: this.operatorName, keyed: withKeyed ? this.#keyed?.({ incremental, checkpointId }) : undefined, operatorStates };
  }

  notifyCheckpointComplete(checkpointId: number): void {
    for (const l of this.#listeners) l.notifyCheckpointComplete?.(checkpointId);
  }

  notifyCheckpointAborted(checkpointId: number): void {
    for (const l of this.#listeners) l.notifyCheckpointAborted?.(checkpointId);
  }
}




/** Longest stretch of serialization before yielding to the event loop (and so to the task). */
const SLICE_MS = 4;
/** Buffer size of the section writer: many key groups per buffer, few copies when one overflows. */
const SECTION_BUFFER_BYTES = 4 * 1024 * 1024;
/**
 * The section writers' buffers, per thread, reused from one checkpoint to the next (a fresh
 * buffer costs more in page faults than serializing into it; see BufferPool). Keeps up to 64 MiB:
 * enough for the state of most tasks; a task with more takes fresh buffers for the rest.
 */
const sectionBuffers = new BufferPool(SECTION_BUFFER_BYTES, 64 * 1024 * 1024);

/**
 * Writes the shared file of an incremental keyed snapshot (state/incremental-snapshot.ts): operator
 * `operatorIndex` of the task, kind `base` or `delta`, one section per key group.
 */
export type WriteSharedKeyedFile = (
  operatorIndex: number,
  operatorId: string,
  kind: "base" | "delta",
  sections: AsyncIterable<TaskSnapshotSection>,
  /** The sections' buffers: told of each section as the file takes it, and of the bytes written. */
  buffers: SectionBufferReturn,
) => Promise<FileRef>;

/** What serializing a task's snapshot learns besides the task file's sections: complete once every section is yielded. */
export interface TaskSnapshotSummary {
  readonly operators: OperatorSnapshotMeta[];
  /** Bytes per operator id, its shared file's included. */
  readonly operatorBytes: Record<string, number>;
  /** Bytes of the shared files written (incremental keyed state). */
  sharedBytes: number;
}

/**
 * The asynchronous part: serializes the frozen operator snapshots of one task into the sections
 * of its task file, key group by key group, yielding to the event loop every few milliseconds so
 * the task keeps processing; `summary` gets the metadata once the last section is yielded. The
 * sections are views of pooled buffers (`SectionBufferReturn` gives them back as they are
 * written), so a caller that writes them as they come holds a few buffers, not the whole state.
 * Releases every keyed part, also on failure. A keyed part with a `shared` (incremental) snapshot
 * has its state written to a shared file by `writeShared`, before it is released; its metadata
 * lists the chain.
 */
export async function* taskSnapshotSections(
  snapshots: readonly OperatorSnapshot[],
  summary: TaskSnapshotSummary,
  writeShared?: WriteSharedKeyedFile,
): AsyncGenerator<TaskSnapshotSection> {
  const { operators, operatorBytes } = summary;
  try {
    let sliceStart = performance.now();
    // Sections are views of a few large buffers (`take`).
    const out = new ByteWriter(SECTION_BUFFER_BYTES, sectionBuffers);
    for (const [operatorIndex, s] of snapshots.entries()) {
      let bytes = 0;
      const keyed = s.keyed;
      let incremental: { chain: FileRef[] } | undefined;
      if (keyed !== undefined) {
        const shared = keyed.shared;
        // Its own writer (and buffers) for the shared file, written at the same time as the task file.
        const sharedOut = shared === undefined ? undefined : new ByteWriter(SECTION_BUFFER_BYTES, sectionBuffers);
        const writeSharedTimers = keyed.writeSharedTimers;
        if (shared !== undefined && writeSharedTimers === undefined) throw new EddyError("INTERNAL", `operator '${s.operatorName}' took an incremental snapshot without its timers`);
        /** Every key group in turn: the task file's sections and (incremental) the shared file's. */
        const groups = async function* (): AsyncGenerator<{ readonly shared: boolean; readonly section: TaskSnapshotSection }> {
          for (let kg = keyed.keyGroupRange.start; kg <= keyed.keyGroupRange.end; kg++) {
            // Incremental: the state and the timers go to the shared file (the task file has no
            // key-group section then). Every group is released and the slice checked, whether or
            // not anything was written for it.
            const sharedBytes = shared !== undefined && shared.writeKeyGroup(kg, sharedOut!) ? sharedOut!.take() : undefined;
            const timerBytes = shared !== undefined && writeSharedTimers!(kg, sharedOut!) ? sharedOut!.take() : undefined;
            let own: TaskSnapshotSection | undefined;
            if (keyed.hasKeyGroup(kg)) {
              keyed.writeKeyGroup(kg, out);
              own = { name: keyedSection(s.operatorId), keyGroup: kg, bytes: out.take() };
            } else if (shared === undefined) continue;
            keyed.releaseKeyGroup(kg);
            if (own !== undefined) yield { shared: false, section: own };
            if (sharedBytes !== undefined) yield { shared: true, section: { name: SHARED_KEYED_SECTION, keyGroup: kg, bytes: sharedBytes } };
            if (timerBytes !== undefined) yield { shared: true, section: { name: SHARED_TIMERS_SECTION, keyGroup: kg, bytes: timerBytes } };
            if (performance.now() - sliceStart >= SLICE_MS) {
              await new Promise<void>((resolve) => setImmediate(resolve));
              sliceStart = performance.now();
            }
          }
        };
        if (shared === undefined) {
          for await (const { section } of groups()) {
            bytes += section.bytes.byteLength;
            yield section;
          }
        } else {
          if (writeShared === undefined) throw new EddyError("INTERNAL", `operator '${s.operatorName}' took an incremental snapshot, but nothing writes shared files here`);
          // Before anything is written: a delta on a snapshot whose file failed is never written.
          const previous = await shared.previous;
          if (previous === undefined) {
            throw new EddyError(
              "INCREMENTAL_CHAIN_BROKEN",
              `the previous incremental snapshot of operator '${s.operatorName}' was not written, so this one (a delta on it) cannot be restored: the checkpoint fails, and the next one writes a full base`,
              { operator: s.operatorName },
            );
          }
          // The task file's sections of this operator (none, as the part promises) wait for its shared file.
          const own: TaskSnapshotSection[] = [];
          const sharedSections = async function* (): AsyncGenerator<TaskSnapshotSection> {
            for await (const { shared: toShared, section } of groups()) {
              if (toShared) yield section;
              else own.push(section);
            }
          };
          // The file is opened with its first section: a delta with no changed key (state or timers) writes none.
          const sectionsOf = sharedSections();
          const first = await sectionsOf.next();
          if (shared.kind === "delta" && first.done === true) incremental = { chain: [...previous] }; // nothing changed
          else {
            const all = async function* (): AsyncGenerator<TaskSnapshotSection> {
              if (first.done !== true) yield first.value;
              yield* sectionsOf;
            };
            const buffers = new SectionBufferReturn();
            let ref: FileRef;
            try {
              ref = await writeShared(operatorIndex, s.operatorId, shared.kind, all(), buffers);
            } finally {
              await sectionsOf.return(undefined);
              buffers.close();
            }
            bytes += ref.size;
            summary.sharedBytes += ref.size;
            incremental = { chain: [...previous, ref] };
          }
          shared.settle(incremental.chain);
          for (const section of own) {
            bytes += section.bytes.byteLength;
            yield section;
          }
        }
        keyed.release();
      }
      // Values a sink gives once its writes are durable: awaited here, off the task's path.
      const operatorValues = await Promise.all(s.operatorStates.map((o) => o.values));
      if (s.operatorStates.length > 0) {
        encodeValue(operatorValues, out);
        const section = { name: operatorStateSection(s.operatorId), bytes: out.take() };
        bytes += section.bytes.byteLength;
        yield section;
      }
      operatorBytes[s.operatorId] = bytes;
      operators.push({
        operatorId: s.operatorId,
        operatorName: s.operatorName,
        ...(keyed === undefined
          ? {}
          : {
              keyed: {
                keyGroupRange: keyed.keyGroupRange,
                states: keyed.states,
                watermark: Number.isFinite(keyed.watermark) ? keyed.watermark : null,
                ...(incremental === undefined ? {} : { incremental }),
              },
            }),
        operatorStates: s.operatorStates.map((o, i) => ({ name: o.name, mode: o.mode, count: operatorValues[i]!.length })),
      });
    }
  } finally {
    for (const s of snapshots) s.keyed?.release();
  }
}

/**
 * The asynchronous part of a task's checkpoint, written: its task file `fileName` in checkpoint
 * `checkpointId`, written as its sections are serialized (format version 2, the header — `meta`
 * given the operators' metadata — after them), each pooled buffer given back once its bytes are
 * on disk, so the task holds a few buffers whatever the size of its state; no file (null) when
 * the task has nothing to write. Shared files (incremental keyed state) by `writeShared`.
 */
export async function writeTaskSnapshot(
  snapshots: readonly OperatorSnapshot[],
  storage: Pick<CheckpointStorage, "writeFile">,
  checkpointId: number,
  fileName: string,
  meta: (operators: readonly OperatorSnapshotMeta[]) => unknown,
  writeShared?: WriteSharedKeyedFile,
): Promise<TaskSnapshotSummary & { readonly file: FileRef | null }> {
  const summary: TaskSnapshotSummary = { operators: [], operatorBytes: {}, sharedBytes: 0 };
  const buffers = new SectionBufferReturn();
  const sections = taskSnapshotSections(snapshots, summary, writeShared);
  try {
    // Opened with its first section.
    const first = await sections.next();
    if (first.done === true) return { ...summary, file: null };
    const all = async function* (): AsyncGenerator<TaskSnapshotSection> {
      yield first.value;
      yield* sections;
    };
    const chunks = encodeSnapshotFileStream("task", () => meta(summary.operators), all(), (bytes) => buffers.handed(bytes));
    const file = await storage.writeFile(checkpointId, fileName, chunks, (written) => buffers.written(written));
    return { ...summary, file };
  } finally {
    // Ends the serialization if the write stopped it (or never began it): its parts are released.
    await sections.return(undefined);
    buffers.close();
  }
}

/**
 * `taskSnapshotSections` gathered: every section in memory (for tests and tools; a task writes
 * them as they come). Give the sections' buffers back with `releaseSectionBuffers` once done.
 */
export async function serializeTaskSnapshot(
  snapshots: readonly OperatorSnapshot[],
  writeShared?: WriteSharedKeyedFile,
): Promise<{ sections: TaskSnapshotSection[]; operators: OperatorSnapshotMeta[]; operatorBytes: Record<string, number>; sharedBytes: number }> {
  const summary: TaskSnapshotSummary = { operators: [], operatorBytes: {}, sharedBytes: 0 };
  const sections: TaskSnapshotSection[] = [];
  for await (const section of taskSnapshotSections(snapshots, summary, writeShared)) sections.push(section);
  return { sections, ...summary };
}

/**
 * Gives the pooled buffers of streamed sections back as soon as they may be reused: every section
 * in a buffer written (`written`) and the writer gone on to another buffer (it never goes back).
 * `close()` gives back the rest once nothing reads the sections any more (the file is written, or
 * failed). Holding every section of a large state until the file is written cost more than the
 * memory: V8 counts buffers as external memory, and each 64 MiB more of it started a full
 * collection of the (large) heap — q18 at 12 M events, checkpoints every 10 s: 80-104 s before
 * (20.2 s without checkpoints), 26-37 s with the buffers reused as written (docs/benchmarks.md).
 */
export class SectionBufferReturn {
  readonly #pool: BufferPool;
  /** Per pooled buffer, its sections handed out and not yet written. */
  readonly #unwritten = new Map<ArrayBufferLike, number>();
  /** The buffer the writer writes into, as far as the sections show. */
  #current: ArrayBufferLike | undefined = undefined;

  /** `pool`: the sections' (the checkpoint writer's, unless a test gives its own). */
  constructor(pool: BufferPool = sectionBuffers) {
    this.#pool = pool;
  }

  /** A section about to be written. */
  handed(bytes: Uint8Array): void {
    if (bytes.byteLength === 0) return;
    const buffer = bytes.buffer;
    this.#unwritten.set(buffer, (this.#unwritten.get(buffer) ?? 0) + 1);
    if (buffer === this.#current) return;
    const previous = this.#current;
    this.#current = buffer;
    if (previous !== undefined && this.#unwritten.get(previous) === 0) this.#giveBack(previous);
  }

  /** Chunks now on disk (others than handed sections are ignored). */
  written(chunks: readonly Uint8Array[]): void {
    for (const chunk of chunks) {
      const buffer = chunk.buffer;
      const n = this.#unwritten.get(buffer);
      if (n === undefined) continue;
      this.#unwritten.set(buffer, n - 1);
      if (n === 1 && buffer !== this.#current) this.#giveBack(buffer);
    }
  }

  /** Nothing reads the sections handed out any more. */
  close(): void {
    this.#pool.release(this.#unwritten.keys());
    this.#unwritten.clear();
    this.#current = undefined;
  }

  #giveBack(buffer: ArrayBufferLike): void {
    this.#unwritten.delete(buffer);
    this.#pool.release([buffer]);
  }
}

/**
 * Gives the buffers of sections from `serializeTaskSnapshot` back for reuse, once nothing reads
 * the sections any more (their file is written, or the checkpoint failed).
 */
export function releaseSectionBuffers(sections: readonly TaskSnapshotSection[]): void {
  sectionBuffers.release(new Set(sections.map((s) => s.bytes.buffer)));
}

/** One operator subtask's snapshot as bytes (what a task snapshot file holds for it). */
export interface SerializedOperatorSnapshot {
  readonly checkpointId: number;
  readonly meta: OperatorSnapshotMeta;
  readonly sections: readonly TaskSnapshotSection[];
}

/** The restore of one operator subtask from its own serialized snapshot (same key-group range). */
export function restoreFromSerialized(snapshot: SerializedOperatorSnapshot): OperatorRestore {
  const { meta, sections } = snapshot;
  const keyedMeta = meta.keyed;
  const byGroup = new Map<number, Uint8Array>();
  for (const s of sections) if (s.name === keyedSection(meta.operatorId) && s.keyGroup !== undefined) byGroup.set(s.keyGroup, s.bytes);
  const opSection = sections.find((s) => s.name === operatorStateSection(meta.operatorId));
  const operatorStates = opSection === undefined ? new Map<string, unknown[]>() : decodeOperatorStates(opSection.bytes, meta);
  return {
    checkpointId: snapshot.checkpointId,
    keyed:
      keyedMeta === undefined
        ? undefined
        : {
            states: keyedMeta.states,
            watermark: keyedMeta.watermark ?? Number.NEGATIVE_INFINITY,
            keyGroup: (kg) => {
              const bytes = byGroup.get(kg);
              return bytes === undefined ? undefined : new ByteReader(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
            },
          },
    operatorState: (name) => operatorStates.get(name),
    operatorStateNames: [...operatorStates.keys()],
  };
}

