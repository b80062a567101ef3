/**
 * Reference counts of the shared files of incremental checkpoints, on the coordinator (Flink's
 * SharedStateRegistry): each complete checkpoint registers the shared files its manifest lists
 * (the chains of its operator subtasks); a checkpoint discarded by retention unregisters them,
 * and a file no retained checkpoint lists any more is deleted. A file is registered only by a
 * complete checkpoint, so a file of a checkpoint in progress is never deleted by it.
 *
 * After a restart the counts are rebuilt from the manifests of the complete checkpoints in
 * storage (as Flink's CompletedCheckpointStore registers the recovered checkpoints), once, before
 * the first retention of the run. Every retention then deletes the shared files that no retained
 * checkpoint lists and that a checkpoint older than the one completed wrote: an aborted or failed
 * checkpoint's (until 2026-12-06 those of the running job stayed until a restart), a write that
 * landed after its checkpoint was given up, a chain whose checkpoints are gone. Files of newer
 * checkpoints are left alone: one in progress may list them yet.
 */
import type { CheckpointManifest } from "./format/manifest.ts";
import { readManifest } from "./format/manifest-reader.ts";
import { retain, type CheckpointStorage } from "./storage.ts";

/** Every shared file a manifest lists (the chains of its incremental operator subtasks), without repeats. */
export function manifestSharedFiles(manifest: CheckpointManifest): { name: string; size: number; sha256: string }[] {
  const out = new Map<string, { name: string; size: number; sha256: string }>();
  for (const task of manifest.tasks) {
    for (const op of task.operators) for (const ref of op.keyed?.incremental?.chain ?? []) out.set(ref.name, ref);
  }
  return [...out.values()];
}

/** The checkpoint id a shared file's name records (`…-<kind>-<checkpoint id>-<random>.kgs`), or undefined. */
export function sharedFileCheckpointId(name: string): number | undefined {
  const m = /-(?:base|delta)-(\d+)-[0-9a-f]+\.kgs$/.exec(name);
  return m === null ? undefined : Number(m[1]);
}

export class SharedStateRegistry {
  /** References per shared file name. */
  readonly #counts = new Map<string, number>();
  /** The files each registered checkpoint lists. */
  readonly #byCheckpoint = new Map<number, readonly string[]>();

  /** Checkpoint `checkpointId` (complete) lists `names`; registering it again changes nothing. */
  register(checkpointId: number, names: readonly string[]): void {
    if (this.#byCheckpoint.has(checkpointId)) return;
    const unique = [...new Set(names)];
    this.#byCheckpoint.set(checkpointId, unique);
    for (const name of unique) this.#counts.set(name, (this.#counts.get(name) ?? 0) + 1);
  }

  /** Checkpoint `checkpointId` is gone: the files nothing references any more (to delete). */
  unregister(checkpointId: number): string[] {
    const names = this.#byCheckpoint.get(checkpointId);
    if (names === undefined) return [];
    this.#byCheckpoint.delete(checkpointId);
    const unused: string[] = [];
    for (const name of names) {
      const n = (this.#counts.get(name) ?? 0) - 1;
      if (n > 0) this.#counts.set(name, n);
      else {
        this.#counts.delete(name);
        unused.push(name);
      }
    }
    return unused;
  }

  /** References of a file (0: none). */
  references(name: string): number {
    return this.#counts.get(name) ?? 0;
  }

  isRegistered(checkpointId: number): boolean {
    return this.#byCheckpoint.has(checkpointId);
  }

  /** Files referenced now. */
  get files(): string[] {
    return [...this.#counts.keys()];
  }
}

export interface SharedRetentionOptions {
  readonly onDeleteFailed?: (name: string, error: unknown) => void;
}

/**
 * Retention with shared files: registers checkpoint `completedId` (and, the first time, every
 * complete checkpoint in storage), discards what `retain` discards, unregisters those and deletes
 * the shared files no retained checkpoint lists. Returns the discarded checkpoint ids.
 */
export class SharedStateRetention {
  readonly registry = new SharedStateRegistry();
  readonly #storage: CheckpointStorage;
  readonly #options: SharedRetentionOptions;
  #recovered = false;
  /** Retentions run one after another (each reads and changes the registry). */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(storage: CheckpointStorage, options: SharedRetentionOptions) {
    this.#storage = storage;
    this.#options = options;
  }

  /** Queues a retention around complete checkpoint `completedId`, whose manifest is `manifest`. */
  retain(completedId: number, manifest: CheckpointManifest, retained: number): Promise<number[]> {
    const run = this.#queue.then(() => this.#retain(completedId, manifest, retained));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #retain(completedId: number, manifest: CheckpointManifest, retained: number): Promise<number[]> {
    const storage = this.#storage;
    this.registry.register(completedId, manifestSharedFiles(manifest).map((f) => f.name));
    if (!this.#recovered) {
      this.#recovered = true;
      for (const id of await storage.listCheckpoints()) {
        if (id === completedId || this.registry.isRegistered(id) || !(await storage.hasManifest(id))) continue;
        const other = readManifest(await storage.readManifest(id), `manifest of checkpoint ${id}`);
        this.registry.register(id, manifestSharedFiles(other).map((f) => f.name));
      }
    }
    const discarded = await retain(storage, completedId, retained);
    for (const id of discarded) for (const name of this.registry.unregister(id)) await this.#delete(name);
    // Files that no retained checkpoint lists, written for a checkpoint older than this one: an
    // aborted or failed checkpoint's (of this run or an earlier one), also one that landed after
    // its checkpoint was given up. None can be listed later: a checkpoint still in progress is
    // newer than this one (a completion subsumes older ones), and its chain's files older than
    // this one are in this one's chain, so registered.
    for (const name of await storage.listSharedFiles()) {
      const createdBy = sharedFileCheckpointId(name);
      if (createdBy !== undefined && createdBy < completedId && this.registry.references(name) === 0) await this.#delete(name);
    }
    return discarded;
  }

  /** Checkpoint `checkpointId` was deleted outside retention (a failed commit's): its references go. */
  forget(checkpointId: number): Promise<void> {
    const run = this.#queue.then(async () => {
      for (const name of this.registry.unregister(checkpointId)) await this.#delete(name);
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #delete(name: string): Promise<void> {
    try {
      await this.#storage.deleteSharedFile(name);
    } catch (e) {
      this.#options.onDeleteFailed?.(name, e);
    }
  }
}
