/**
 * Reading a manifest file's parsed JSON: the format is checked, then the reader of its version
 * turns it into the current CheckpointManifest, validated before anything uses it.
 */
import { EddyError } from "../../core/errors.ts";
import { MANIFEST_FORMAT, type CheckpointManifest } from "./manifest.ts";
import { validateManifest } from "./manifest-validation.ts";

/**
 * One reader per manifest version this Eddy reads: each turns a parsed manifest of its version
 * into the current CheckpointManifest (a later version adds its reader here, and the readers of
 * older versions upgrade what they read). Every reader validates before it returns.
 */
const READERS: Readonly<Record<number, (value: Partial<CheckpointManifest>, where: string) => CheckpointManifest>> = {
  1: (m, where) => {
    // Hostile input: file names, key-group ranges, parallelisms and formats are checked before use.
    validateManifest(m as CheckpointManifest, where);
    return m as CheckpointManifest;
  },
};

/** The manifest parsed from a checkpoint's or savepoint's manifest file, checked; `where` names it in errors. */
export function readManifest(value: unknown, where: string): CheckpointManifest {
  const m = value as Partial<CheckpointManifest> | null;
  if (m === null || typeof m !== "object" || m.format !== MANIFEST_FORMAT || !Array.isArray(m.tasks) || typeof m.checkpointId !== "number") {
    throw new EddyError("CHECKPOINT_CORRUPT", `${where}: not an Eddy checkpoint manifest`);
  }
  const reader = typeof m.version === "number" && Object.hasOwn(READERS, m.version) ? READERS[m.version] : undefined;
  if (reader === undefined) {
    throw new EddyError("CHECKPOINT_UNSUPPORTED_VERSION", `${where}: manifest version ${String(m.version)} (this Eddy reads ${Object.keys(READERS).join(", ")})`);
  }
  return reader(m, where);
}
