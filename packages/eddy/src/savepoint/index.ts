/**
 * `eddy/savepoint`: reading savepoints (and complete checkpoints, which have the same shape)
 * outside a running job — to inspect them (`eddy savepoint inspect`), to check what a job held,
 * or to build tools on top (docs/design/savepoints.md).
 *
 * The top layer: it may import from every layer below (executor, coordinator and control included), and nothing imports
 * it but the CLI. Invariant: nothing here writes to a savepoint directory, and nothing in a
 * savepoint is used before `openSavepoint` has validated the manifest and verified every file.
 */
export {
  openSavepoint,
  type KeyedStateEntry,
  type KeyedStateInfo,
  type OperatorInfo,
  type OperatorStateInfo,
  type SavepointReader,
  type SubtaskInfo,
  type TimerInfo,
} from "./reader.ts";
export { inspectSavepoint, runInspectCommand, type InspectOptions, type CommandIo } from "./inspect.ts";
export type { CheckpointManifest } from "../checkpoint/format/manifest.ts";
