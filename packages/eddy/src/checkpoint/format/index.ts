/**
 * checkpoint/format/ — the bytes Eddy persists, and one reader per version of each. Everything a
 * checkpoint or savepoint holds is described here and nowhere else, so the executor's restore,
 * the coordinator's recovery and the offline tools (the savepoint reader, `eddy savepoint
 * inspect`) read the same formats through the same code. Documented in
 * docs/design/checkpoint-files.md and docs/design/savepoints.md.
 *
 * | format | file | version written | versions read |
 * |---|---|---|---|
 * | container: magic, JSON header, sections with CRC-32, trailer | container.ts | 1 | 1 |
 * | manifest (`eddy.checkpoint`): the checkpoint's operators, tasks and enumerators | manifest.ts, manifest-reader.ts, manifest-validation.ts | 1 | 1 (`readManifest` picks the reader) |
 * | task snapshot: per-operator metadata, keyed sections per key group, operator-state sections | task-snapshot.ts | (the container's) | (the container's) |
 * | keyed state cells, per key group (`CELL_FORMAT`) | state/keyed-state-meta.ts, state/heap-snapshot.ts | `eddy.default/3` | `eddy.default/3`, `/2`, `/1` (manifest-validation.ts lists them) |
 * | timers, per key group after the cells (task files) or in `timers` sections (shared files) | timers.ts | (the cells') | (the cells') |
 * | shared files of incremental checkpoints: `keyed` and `timers` sections per key group, base or delta | keyed-chain.ts, timers.ts, state/incremental-snapshot.ts | kinds `keyed-base-2`, `keyed-delta-2` | those, and `keyed-base`, `keyed-delta` (version 1: the timers in the task files) |
 *
 * Part of the checkpoint/ layer: imports core/, state/ and checkpoint/ only. Every reader treats
 * its input as hostile (a savepoint is a directory a user hands us): bounded before it is parsed,
 * validated before it is used, and a fault is `CHECKPOINT_CORRUPT` or
 * `CHECKPOINT_UNSUPPORTED(_VERSION)` naming the file.
 */
export { CONTAINER_BYTES, SNAPSHOT_FILE_VERSION, SnapshotFile, encodeSnapshotFile, encodeSnapshotFileChunks } from "./container.ts";
export type { SnapshotSection, SnapshotSectionInfo } from "./container.ts";
export { MANIFEST_FORMAT, MANIFEST_VERSION, manifestFiles } from "./manifest.ts";
export { readManifest } from "./manifest-reader.ts";
export type { CheckpointManifest, ManifestOperator } from "./manifest.ts";
export { validateManifest } from "./manifest-validation.ts";
export { decodeOperatorStates, keyedSection, operatorStateSection } from "./task-snapshot.ts";
export type { OperatorSnapshotMeta, OperatorStateMode, TaskSnapshotHandle, TaskSnapshotSection } from "./task-snapshot.ts";
