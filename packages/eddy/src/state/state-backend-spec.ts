/**
 * Which keyed state backend a job runs with, as data (it travels to worker threads, which build
 * the factory there): `env.setStateBackend(kind, options)`, `-D state.backend=…`,
 * `state.backend.disk.dir`, `state.backend.disk.cache-size`. docs/state-backends.md.
 */
import { isAbsolute, resolve } from "node:path";
import { EddyError } from "../core/errors.ts";
import { DEFAULT_DISK_CACHE_SIZE, diskStateBackend } from "./disk-keyed-state-backend.ts";
import { heapStateBackend } from "./heap-keyed-state-backend.ts";
import type { KeyedStateBackendFactory } from "./keyed-state-backend.ts";

export type StateBackendKind = "heap" | "disk";

export type StateBackendSpec =
  | { readonly kind: "heap" }
  | {
      readonly kind: "disk";
      /** Root of the stores (absolute once resolved by the coordinator). */
      readonly dir: string;
      /** Keys on the heap per operator subtask. */
      readonly cacheSize: number;
    };

/** Options of `setStateBackend("disk", …)`. */
export interface DiskStateBackendInput {
  /** Root directory of the local stores (default ./.eddy/state); relative to the working directory. */
  readonly dir?: string;
  /** Keys kept on the heap per operator subtask (default 100,000). */
  readonly cacheSize?: number;
}

/** Where disk state lives unless `state.backend.disk.dir` says otherwise. */
export const DEFAULT_DISK_STATE_DIR = ".eddy/state";

/** Checks a backend choice and its options, refusing what is unknown or bad by name; resolves the directory. */
export function stateBackendSpec(kind: unknown, options: DiskStateBackendInput = {}): StateBackendSpec {
  if (kind === "heap") {
    if (options.dir !== undefined || options.cacheSize !== undefined) {
      throw new EddyError("INVALID_STATE_BACKEND", "the heap state backend takes no options (dir and cacheSize are the disk backend's)");
    }
    return { kind: "heap" };
  }
  if (kind !== "disk") throw new EddyError("INVALID_STATE_BACKEND", `unknown state backend ${JSON.stringify(kind)}: use "heap" or "disk"`);
  for (const name of Object.keys(options)) {
    if (name !== "dir" && name !== "cacheSize") throw new EddyError("INVALID_STATE_BACKEND", `unknown option '${name}' of the disk state backend (dir, cacheSize)`);
  }
  const dir = options.dir ?? DEFAULT_DISK_STATE_DIR;
  if (typeof dir !== "string" || dir.trim() === "") throw new EddyError("INVALID_STATE_BACKEND", "state.backend.disk.dir must be a directory path");
  const cacheSize = options.cacheSize ?? DEFAULT_DISK_CACHE_SIZE;
  if (!Number.isSafeInteger(cacheSize) || cacheSize < 1) {
    throw new EddyError("INVALID_STATE_BACKEND", `state.backend.disk.cache-size must be a positive integer, got ${String(cacheSize)}`);
  }
  return { kind: "disk", dir: isAbsolute(dir) ? dir : resolve(dir), cacheSize };
}

/** The factory of a spec (undefined: the heap backend). */
export function stateBackendFactory(spec: StateBackendSpec | undefined): KeyedStateBackendFactory {
  if (spec === undefined || spec.kind === "heap") return heapStateBackend;
  return diskStateBackend({ dir: spec.dir, cacheSize: spec.cacheSize });
}
