/**
 * Which CheckpointStorage a job writes to. The default is a local directory; another one (an object
 * store, or a test's fault-injecting wrapper) is named by module URL and export, like a job
 * (docs/design/architecture.md, "A job is a module"), because every worker thread creates its own
 * instance: a function cannot cross threads, a module reference can.
 */
import { pathToFileURL } from "node:url";
import { isAbsolute, resolve } from "node:path";
import { EddyError } from "../core/errors.ts";
import { LocalCheckpointStorage, type CheckpointStorage } from "../checkpoint/storage.ts";
import { importModule } from "./preloaded-modules.ts";

/** A module exporting `(location) => CheckpointStorage` under `exportName` (default "default"). */

/** A directory of checkpoints: `<rootDir>/<jobId>/chk-<n>/`. */
export interface CheckpointLocation {
  readonly rootDir: string;
  readonly jobId: string;
}

export interface CheckpointStorageRef {
  /** A file URL, or a path (resolved against the working directory). */
  readonly module: string;
  readonly exportName?: string;
}

export type CheckpointStorageFactory = (location: CheckpointLocation) => CheckpointStorage;

/** The storage for `location`: the local directory, or the one `ref`'s module creates. */
export async function openCheckpointStorage(ref: CheckpointStorageRef | undefined, location: CheckpointLocation): Promise<CheckpointStorage> {
  if (ref === undefined) return new LocalCheckpointStorage(location);
  const { module: url, exportName = "default" } = normalizeStorageRef(ref)!;
  const module = await importModule(url);
  const factory = module[exportName];
  if (typeof factory !== "function") {
    throw new EddyError("INVALID_CHECKPOINT_STORAGE", `checkpoint storage module ${url} has no function export '${exportName}'`);
  }
  return (factory as CheckpointStorageFactory)(location);
}

/** The ref in the form workers receive (an absolute file URL). */
export function normalizeStorageRef(ref: CheckpointStorageRef | undefined): CheckpointStorageRef | undefined {
  if (ref === undefined) return undefined;
  const module = ref.module.startsWith("file:") ? ref.module : pathToFileURL(isAbsolute(ref.module) ? ref.module : resolve(ref.module)).href;
  return { module, exportName: ref.exportName ?? "default" };
}
