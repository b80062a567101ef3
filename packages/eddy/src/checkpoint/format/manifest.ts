/**
 * The checkpoint manifest's format (docs/design/checkpoint-files.md): what a complete checkpoint
 * or savepoint lists about itself. Read with `readManifest` (manifest-reader.ts), which picks the
 * reader of the manifest's version and validates it (manifest-validation.ts) before anything uses
 * it; built by the coordinator's checkpoint runner.
 */
import type { FileRef } from "../storage.ts";
import type { TaskSnapshotHandle } from "./task-snapshot.ts";

export const MANIFEST_FORMAT = "eddy.checkpoint";
/** The version this Eddy writes. */
export const MANIFEST_VERSION = 1;

/** The manifest of a complete checkpoint (stored by CheckpointStorage.commitManifest). */
export interface CheckpointManifest {
  readonly format: typeof MANIFEST_FORMAT;
  readonly version: number;
  readonly jobId: string;
  readonly jobName: string;
  readonly checkpointId: number;
  /**
   * The run attempt that wrote it (0 for the first, +1 per restart). With the exclusive manifest
   * commit, a stale attempt can never replace a newer attempt's checkpoint.
   */
  readonly generation: number;
  readonly isSavepoint: boolean;
  /** Taken after every task finished: restoring it only commits what sinks held. */
  readonly isFinal: boolean;
  /** When the checkpoint was triggered and when it completed (ms since the epoch). */
  readonly triggeredAtMs: number;
  readonly completedAtMs: number;
  /**
   * Per operator id (uid): how it ran when the checkpoint was taken, and what state it holds —
   * the same as its tasks' entries say, gathered so a reader sees it at a glance.
   */
  readonly operators: Readonly<Record<string, ManifestOperator>>;
  /** One entry per task (chain subtask) that acknowledged. */
  readonly tasks: readonly TaskSnapshotHandle[];
  /** Split enumerator state per source operator id (JSON). */
  readonly enumerators: Readonly<Record<string, unknown>>;
}

export interface ManifestOperator {
  readonly name: string;
  readonly parallelism: number;
  readonly maxParallelism: number;
  /** Keyed states: name, kind, codec (id and version, if declared) and the cells' byte format. */
  readonly keyedStates?: readonly { readonly name: string; readonly kind: string; readonly format: string; readonly codec?: { readonly id: string; readonly version: number } }[];
  readonly operatorStates?: readonly { readonly name: string; readonly mode: string }[];
}

/** Every file a manifest lists. */
export function manifestFiles(manifest: CheckpointManifest): FileRef[] {
  return manifest.tasks.flatMap((t) => (t.file === null ? [] : [t.file]));
}
