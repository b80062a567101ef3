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
 * (copy-on-write; O(key groups) for keyed state); `writeTaskSnapshot` turns the frozen parts into
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
import type { FileRef } from "../checkpoint/storage.ts";
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
export type WriteSharedKeyedFile = (operatorIndex: number, operatorId: string, kind: "base" | "delta", sections: AsyncIterable<TaskSnapshotSection>) => Promise<FileRef>;

/**
 * The asynchronous part: serializes the frozen operator snapshots of one task into sections and
 * metadata, key group by key group, yielding to the event loop every few milliseconds so the task
 * keeps processing. Releases every keyed part, also on failure. A keyed part with a `shared`
 * (incremental) snapshot has its state written to a shared file by `writeShared`, before it is
 * released; its metadata lists the chain.
 */
export async function serializeTaskSnapshot(
  snapshots: readonly OperatorSnapshot[],
  writeShared?: WriteSharedKeyedFile,
): Promise<{ sections: TaskSnapshotSection[]; operators: OperatorSnapshotMeta[]; operatorBytes: Record<string, number>; sharedBytes: number }> {
  const sections: TaskSnapshotSection[] = [];
  const operators: OperatorSnapshotMeta[] = [];
  const operatorBytes: Record<string, number> = {};
  let sharedBytes = 0;
  try {
    let sliceStart = performance.now();
    // Sections are views of a few large buffers (`take`), written to the file as they are.
    const out = new ByteWriter(SECTION_BUFFER_BYTES, sectionBuffers);
    for (const [operatorIndex, s] of snapshots.entries()) {
      const firstSection = sections.length;
      const keyed = s.keyed;
      let incremental: { chain: FileRef[] } | undefined;
      let ownSharedBytes = 0;
      if (keyed !== undefined) {
        const shared = keyed.shared;
        // Not from the pool: the task file's sections are given back to it without these.
        const sharedOut = shared === undefined ? undefined : new ByteWriter(SECTION_BUFFER_BYTES);
        /** Every key group in turn; yields the shared file's sections (incremental), which are written as they come. */
        const writeSharedTimers = keyed.writeSharedTimers;
        if (shared !== undefined && writeSharedTimers === undefined) throw new EddyError("INTERNAL", `operator '${s.operatorName}' took an incremental snapshot without its timers`);
        const groups = async function* (): AsyncGenerator<TaskSnapshotSection> {
          for (let kg = keyed.keyGroupRange.start; kg <= keyed.keyGroupRange.end; kg++) {
            // Incremental: the state and the timers go to the shared file (the task file has no
            // key-group section then). Every group is released and the slice checked, whether or
            // not anything was written for it.
            const sharedBytes = shared !== undefined && shared.writeKeyGroup(kg, sharedOut!) ? sharedOut!.take() : undefined;
            const timerBytes = shared !== undefined && writeSharedTimers!(kg, sharedOut!) ? sharedOut!.take() : undefined;
            if (keyed.hasKeyGroup(kg)) {
              keyed.writeKeyGroup(kg, out);
              sections.push({ name: keyedSection(s.operatorId), keyGroup: kg, bytes: out.take() });
            } else if (shared === undefined) continue;
            keyed.releaseKeyGroup(kg);
            if (sharedBytes !== undefined) yield { name: SHARED_KEYED_SECTION, keyGroup: kg, bytes: sharedBytes };
            if (timerBytes !== undefined) yield { name: SHARED_TIMERS_SECTION, keyGroup: kg, bytes: timerBytes };
            if (performance.now() - sliceStart >= SLICE_MS) {
              await new Promise<void>((resolve) => setImmediate(resolve));
              sliceStart = performance.now();
            }
          }
        };
        if (shared === undefined) for await (const _ of groups());
        else {
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
          // The file is opened with its first section: a delta with no changed key (state or timers) writes none.
          const sectionsOf = groups();
          const first = await sectionsOf.next();
          if (shared.kind === "delta" && first.done === true) incremental = { chain: [...previous] }; // nothing changed
          else {
            const all = async function* (): AsyncGenerator<TaskSnapshotSection> {
              if (first.done !== true) yield first.value;
              yield* sectionsOf;
            };
            const ref = await writeShared(operatorIndex, s.operatorId, shared.kind, all());
            ownSharedBytes = ref.size;
            incremental = { chain: [...previous, ref] };
          }
          shared.settle(incremental.chain);
        }
        keyed.release();
      }
      // Values a sink gives once its writes are durable: awaited here, off the task's path.
      const operatorValues = await Promise.all(s.operatorStates.map((o) => o.values));
      if (s.operatorStates.length > 0) {
        encodeValue(operatorValues, out);
        sections.push({ name: operatorStateSection(s.operatorId), bytes: out.take() });
      }
      operatorBytes[s.operatorId] = sections.slice(firstSection).reduce((n, section) => n + section.bytes.byteLength, 0) + ownSharedBytes;
      sharedBytes += ownSharedBytes;
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
  return { sections, operators, operatorBytes, sharedBytes };
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

