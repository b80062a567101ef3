/**
 * Restoring a job from a checkpoint: what each subtask gets back (the formats it reads are in
 * checkpoint/format/).
 *
 * State is matched to operators by operator id (the uid). Keyed state is found per key group in
 * whichever old subtask's file held it, so a restore also works when the parallelism changed;
 * operator list state is given back per old subtask at the same parallelism, and otherwise
 * divided round-robin (`split`) or given to every subtask (`union`); broadcast state, equal in
 * every old subtask, is taken by new subtask i from old subtask i mod the old parallelism.
 */
import { ByteReader } from "../core/codec/bytes.ts";
import { EddyError } from "../core/errors.ts";
import { keyGroupRangeForOperator } from "../core/key-group.ts";
import { SnapshotFile, type SectionSource } from "../checkpoint/format/container.ts";
import type { CheckpointManifest } from "../checkpoint/format/manifest.ts";
import type { CheckpointStorage, FileRef } from "../checkpoint/storage.ts";
import type { Plan, PlanChain, PlanNode } from "../graph/plan.ts";
import { decodeOperatorStates, keyedSection, operatorStateSection, type OperatorSnapshotMeta, type TaskSnapshotHandle } from "../checkpoint/format/task-snapshot.ts";
import type { OperatorRestore, RestoredKeyed } from "../runtime/checkpointing.ts";
import type { KeyedStateMeta } from "../state/keyed-state-meta.ts";
import { chainKeyGroupCells, chainKeyGroupReader, chainTimers, checkChain } from "../checkpoint/format/keyed-chain.ts";
import { readKeyGroup } from "../state/heap-snapshot.ts";

/** A key group's timer part with no timers (event time, processing time). */
function emptyTimers(): ByteReader {
  return new ByteReader(new Uint8Array([0, 0]).buffer);
}

/** What one old subtask recorded for one operator. */
interface OldPart {
  readonly subtask: number;
  readonly file: FileRef | null;
  readonly meta: OperatorSnapshotMeta;
}

/** Gives each subtask of this process its share of a checkpoint. */
export class CheckpointRestore {
  readonly checkpointId: number;
  readonly manifest: CheckpointManifest;
  readonly #parts: Map<string, OldPart[]>;
  readonly #files: Map<string, SnapshotFile>;
  /** Shared files of incremental chains, by name. */
  readonly #shared: Map<string, SectionSource>;

  private constructor(manifest: CheckpointManifest, parts: Map<string, OldPart[]>, files: Map<string, SnapshotFile>, shared: Map<string, SectionSource>) {
    this.checkpointId = manifest.checkpointId;
    this.manifest = manifest;
    this.#parts = parts;
    this.#files = files;
    this.#shared = shared;
  }

  /**
   * Reads (and verifies) the files that subtasks owned here need: `owns(chain, subtask)` says
   * which subtasks run in this process.
   */
  static async load(storage: Pick<CheckpointStorage, "readFile" | "openSharedFile">, manifest: CheckpointManifest, plan: Plan, owns: (chain: PlanChain, subtask: number) => boolean): Promise<CheckpointRestore> {
    const parts = new Map<string, OldPart[]>();
    for (const task of manifest.tasks) {
      for (const meta of task.operators) {
        let list = parts.get(meta.operatorId);
        if (list === undefined) parts.set(meta.operatorId, (list = []));
        list.push({ subtask: task.subtask, file: task.file, meta });
      }
    }
    const needed = new Map<string, FileRef>();
    const neededShared = new Map<string, FileRef>();
    for (const chain of plan.chains) {
      for (let subtask = 0; subtask < chain.parallelism; subtask++) {
        if (!owns(chain, subtask)) continue;
        for (const node of chain.nodes) {
          const range = keyGroupRangeForOperator(node.maxParallelism, node.parallelism, subtask);
          for (const part of parts.get(node.operatorId) ?? []) {
            const keyed = part.meta.keyed;
            const intersects = keyed !== undefined && keyed.keyGroupRange.start <= range.end && keyed.keyGroupRange.end >= range.start;
            // An incremental subtask without operator state has no task file, only its chain (with its timers since version 2).
            if (intersects) for (const ref of keyed.incremental?.chain ?? []) neededShared.set(ref.name, ref);
            if (part.file === null) continue;
            if (intersects || part.meta.operatorStates.length > 0) needed.set(part.file.name, part.file);
          }
        }
      }
    }
    const files = new Map<string, SnapshotFile>();
    await Promise.all(
      [...needed.values()].map(async (ref) => {
        const bytes = await storage.readFile(manifest.checkpointId, ref);
        files.set(ref.name, SnapshotFile.parse(bytes, { fileName: ref.name, expectKind: "task" }));
      }),
    );
    // Opened by their index (its SHA-256 in the ref), then read a section at a time as key groups
    // are restored, each section checked by its CRC: a state restored locally reads only its
    // timers, not gigabytes of state. (Files without an index checksum are verified whole first.)
    const shared = new Map<string, SectionSource>();
    await Promise.all(
      [...neededShared.values()].map(async (ref) => {
        shared.set(ref.name, await storage.openSharedFile(ref, "index"));
      }),
    );
    return new CheckpointRestore(manifest, parts, files, shared);
  }

  /** Split enumerator state recorded for source operator `operatorId`, if any. */
  enumeratorState(operatorId: string): unknown {
    return this.manifest.enumerators[operatorId];
  }

  /** What subtask `subtask` of `node` restores (undefined: the checkpoint has nothing for it). */
  restoreFor(node: PlanNode, subtask: number): OperatorRestore | undefined {
    const parts = this.#parts.get(node.operatorId);
    if (parts === undefined) return undefined;
    const recorded = this.manifest.operators[node.operatorId];
    if (recorded !== undefined && recorded.maxParallelism !== node.maxParallelism && parts.some((p) => p.meta.keyed !== undefined)) {
      // Keyed state is stored per key group; another number of key groups would put keys in the wrong ones.
      throw new EddyError(
        "MAX_PARALLELISM_MISMATCH",
        `operator '${node.name}' (uid '${node.operatorId}') has keyed state for max parallelism ${recorded.maxParallelism} in checkpoint ${this.checkpointId}, ` +
          `but runs with max parallelism ${node.maxParallelism}: set it to ${recorded.maxParallelism} (setMaxParallelism / --max-parallelism)`,
        { operator: node.name },
      );
    }
    const oldParallelism = recorded?.parallelism ?? parts.length;
    const range = keyGroupRangeForOperator(node.maxParallelism, node.parallelism, subtask);
    const keyedParts = parts.filter(
      (p) => p.meta.keyed !== undefined && p.meta.keyed.keyGroupRange.start <= range.end && p.meta.keyed.keyGroupRange.end >= range.start,
    );
    let keyed: RestoredKeyed | undefined;
    if (keyedParts.length > 0) {
      const states = new Map<string, KeyedStateMeta>();
      let watermark = Number.POSITIVE_INFINITY;
      for (const p of keyedParts) {
        for (const s of p.meta.keyed!.states) states.set(s.name, s);
        watermark = Math.min(watermark, p.meta.keyed!.watermark ?? Number.NEGATIVE_INFINITY);
      }
      /**
       * The old part holding `kg`, its task file's section of the group, and its chain's files if
       * incremental; `timersInChain`: the chain (version 2) holds the timers too.
       */
      const partOf = (kg: number): { part: OldPart; bytes: Uint8Array | undefined; files: readonly SectionSource[] | undefined; timersInChain: boolean } | undefined => {
        const part = keyedParts.find((p) => kg >= p.meta.keyed!.keyGroupRange.start && kg <= p.meta.keyed!.keyGroupRange.end);
        if (part === undefined) return undefined;
        const bytes = part.file === null ? undefined : this.#file(part.file).section(keyedSection(node.operatorId), kg);
        const files = part.meta.keyed!.incremental?.chain.map((ref) => this.#sharedFile(ref));
        const timersInChain = files !== undefined && checkChain(files) === 2;
        // Version 2: nothing of the group in the task file. Version 1: the task file's section is an empty state part, then the timers.
        if (timersInChain && bytes !== undefined) {
          throw new EddyError("CHECKPOINT_CORRUPT", `checkpoint file '${part.file!.name}' holds key group ${kg} of '${node.name}', which its incremental chain should hold (state and timers)`);
        }
        if (files !== undefined && bytes !== undefined && bytes[0] !== 0) {
          throw new EddyError("CHECKPOINT_CORRUPT", `checkpoint file '${part.file!.name}' holds keyed state of '${node.name}' in key group ${kg}, which its incremental chain should hold`);
        }
        return { part, bytes, files, timersInChain };
      };
      const readerOf = (bytes: Uint8Array): ByteReader => new ByteReader(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
      const only = keyedParts.length === 1 ? keyedParts[0]!.meta.keyed! : undefined;
      const local =
        only?.incremental !== undefined && only.keyGroupRange.start === range.start && only.keyGroupRange.end === range.end
          ? {
              checkpointId: this.checkpointId,
              chain: only.incremental.chain,
              timers: (kg: number): ByteReader | undefined => {
                const found = partOf(kg);
                if (found === undefined) return undefined;
                const { bytes, files, timersInChain } = found;
                if (timersInChain) return chainTimers(files!, kg);
                return bytes === undefined ? undefined : readerOf(bytes.subarray(1));
              },
            }
          : undefined;
      keyed = {
        states: [...states.values()],
        watermark,
        ...(local === undefined ? {} : { local }),
        keyGroup: (kg) => {
          const found = partOf(kg);
          if (found === undefined) return undefined;
          const { bytes, files } = found;
          if (files !== undefined) return chainKeyGroupReader(files, kg, (name) => states.get(name), bytes?.subarray(1));
          return bytes === undefined ? undefined : readerOf(bytes);
        },
        keyGroupCells: (kg) => {
          const found = partOf(kg);
          if (found === undefined) return undefined;
          const { bytes, files, timersInChain } = found;
          if (files === undefined) {
            // A full snapshot: the canonical bytes, decoded as the backend restores them.
            if (bytes === undefined) return undefined;
            const input = readerOf(bytes);
            const metaOf = (name: string): KeyedStateMeta | undefined => states.get(name);
            return { cells: (onCell) => readKeyGroup(input, metaOf, onCell), rest: input };
          }
          const cells = chainKeyGroupCells(files, kg, (name) => states.get(name));
          const timers = timersInChain ? chainTimers(files, kg) : bytes === undefined ? undefined : readerOf(bytes.subarray(1));
          if (cells === undefined && timers === undefined) return undefined;
          return { cells, rest: timers ?? emptyTimers() };
        },
      };
    }
    const stateLists = new Map<string, { mode: string; perOld: (readonly unknown[])[] }>();
    for (const p of [...parts].sort((a, b) => a.subtask - b.subtask)) {
      if (p.meta.operatorStates.length === 0 || p.file === null) continue;
      const bytes = this.#file(p.file).section(operatorStateSection(node.operatorId));
      if (bytes === undefined) {
        throw new EddyError("CHECKPOINT_CORRUPT", `checkpoint file '${p.file.name}' lacks the operator state of '${p.meta.operatorName}'`);
      }
      const decoded = decodeOperatorStates(bytes, p.meta);
      for (const o of p.meta.operatorStates) {
        let entry = stateLists.get(o.name);
        if (entry === undefined) stateLists.set(o.name, (entry = { mode: o.mode, perOld: [] }));
        entry.perOld[p.subtask] = decoded.get(o.name) ?? [];
      }
    }
    const checkpointId = this.checkpointId;
    return {
      checkpointId,
      keyed,
      operatorStateNames: [...stateLists.keys()],
      operatorState(name) {
        const entry = stateLists.get(name);
        if (entry === undefined) return undefined;
        if (entry.mode === "union") return entry.perOld.flatMap((v) => v ?? []);
        // Every old subtask wrote the same entries; spread the reads over the old files (Flink).
        if (entry.mode === "broadcast") return entry.perOld[subtask % oldParallelism] ?? [];
        if (oldParallelism === node.parallelism) return entry.perOld[subtask] ?? [];
        return entry.perOld.flatMap((v) => v ?? []).filter((_, i) => i % node.parallelism === subtask);
      },
    };
  }

  #sharedFile(ref: FileRef): SectionSource {
    const file = this.#shared.get(ref.name);
    if (file === undefined) throw new EddyError("INTERNAL", `shared checkpoint file '${ref.name}' was not loaded`);
    return file;
  }

  #file(ref: FileRef): SnapshotFile {
    const file = this.#files.get(ref.name);
    if (file === undefined) throw new EddyError("INTERNAL", `checkpoint file '${ref.name}' was not loaded`);
    return file;
  }
}
