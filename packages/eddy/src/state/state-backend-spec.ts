/**
 * Which keyed state backend a job runs with, as data (it travels to worker threads, which build
 * the factory there): `env.setStateBackend(kind, options)`, `-D state.backend=…`,
 * `state.backend.disk.*`, `state.backend.heap.*`. docs/state-backends.md.
 */
import { isAbsolute, resolve } from "node:path";
import { EddyError } from "../core/errors.ts";
import { DEFAULT_DISK_CACHE_SIZE, DEFAULT_MAX_CHAIN_LENGTH, diskStateBackend } from "./disk-keyed-state-backend.ts";
import { HeapKeyedStateBackend, heapStateBackend } from "./heap-keyed-state-backend.ts";
import type { KeyedStateBackendFactory } from "./keyed-state-backend.ts";
import { checkMaxChainLength } from "./snapshot-chain.ts";

export type StateBackendKind = "heap" | "disk";

export type StateBackendSpec =
  | {
      readonly kind: "heap";
      /** Checkpoints write only what changed (state.backend.heap.incremental); absent: false. */
      readonly incremental?: boolean;
      /** Deltas between two full bases (state.backend.heap.max-chain-length); absent: the default. */
      readonly maxChainLength?: number;
    }
  | {
      readonly kind: "disk";
      /** Root of the stores (absolute once resolved by the coordinator). */
      readonly dir: string;
      /** Keys on the heap per operator subtask. */
      readonly cacheSize: number;
      /** Estimated heap bytes of those keys per operator subtask (undefined: the default, resolved where the backend runs). */
      readonly cacheBytes?: number;
      /** Checkpoints write only what changed (state.backend.disk.incremental). */
      readonly incremental: boolean;
      /** Deltas between two full bases (state.backend.disk.max-chain-length). */
      readonly maxChainLength: number;
      /** Stores kept for a restore on this machine (state.backend.disk.local-recovery). */
      readonly localRecovery: boolean;
    };

/** Options of `setStateBackend("disk", …)`. */
export interface DiskStateBackendInput {
  /** Root directory of the local stores (default ./.eddy/state); relative to the working directory. */
  readonly dir?: string;
  /** Keys kept on the heap per operator subtask (default 10,000,000). */
  readonly cacheSize?: number;
  /**
   * Estimated heap bytes of the keys kept on the heap per operator subtask (default 256 MiB, at
   * most an eighth of the worker's heap limit); whichever bound is reached first.
   */
  readonly cacheBytes?: number;
  /** Incremental checkpoints (default true; savepoints are always full). */
  readonly incremental?: boolean;
  /** Incremental checkpoints after a full one before the next full one (default 10; 0: all full). */
  readonly maxChainLength?: number;
  /**
   * Keep each subtask's store so that a restore on the same machine rolls it back to the
   * checkpoint instead of rebuilding it from the checkpoint's files (default false; needs
   * incremental checkpoints).
   */
  readonly localRecovery?: boolean;
}

/** Options of `setStateBackend("heap", …)`. */
export interface HeapStateBackendInput {
  /**
   * Incremental checkpoints (default false; savepoints are always full): a checkpoint writes a
   * full base, then the keys changed or removed since the previous checkpoint.
   */
  readonly incremental?: boolean;
  /** Incremental checkpoints after a full one before the next full one (default 10; 0: all full). */
  readonly maxChainLength?: number;
}

/** Where disk state lives unless `state.backend.disk.dir` says otherwise. */
export const DEFAULT_DISK_STATE_DIR = ".eddy/state";

/** Checks a backend choice and its options, refusing what is unknown or bad by name; resolves the directory. */
export function stateBackendSpec(kind: unknown, options: DiskStateBackendInput | HeapStateBackendInput = {}): StateBackendSpec {
  if (kind === "heap") {
    const known = ["incremental", "maxChainLength"];
    for (const [name, value] of Object.entries(options)) {
      if (value !== undefined && !known.includes(name)) {
        throw new EddyError("INVALID_STATE_BACKEND", `unknown option '${name}' of the heap state backend (incremental, maxChainLength; dir, cacheSize, cacheBytes and localRecovery are the disk backend's)`);
      }
    }
    const { incremental, maxChainLength } = options;
    if (incremental !== undefined && typeof incremental !== "boolean") throw new EddyError("INVALID_STATE_BACKEND", `state.backend.heap.incremental must be true or false, got ${String(incremental)}`);
    if (maxChainLength !== undefined) checkMaxChainLength(maxChainLength, "state.backend.heap.max-chain-length");
    return { kind: "heap", ...(incremental === undefined ? {} : { incremental }), ...(maxChainLength === undefined ? {} : { maxChainLength }) };
  }
  if (kind !== "disk") throw new EddyError("INVALID_STATE_BACKEND", `unknown state backend ${JSON.stringify(kind)}: use "heap" or "disk"`);
  return diskSpec(options);
}

function diskSpec(options: DiskStateBackendInput): StateBackendSpec {
  const known = ["dir", "cacheSize", "cacheBytes", "incremental", "maxChainLength", "localRecovery"];
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) throw new EddyError("INVALID_STATE_BACKEND", `unknown option '${name}' of the disk state backend (${known.join(", ")})`);
  }
  const dir = options.dir ?? DEFAULT_DISK_STATE_DIR;
  if (typeof dir !== "string" || dir.trim() === "") throw new EddyError("INVALID_STATE_BACKEND", "state.backend.disk.dir must be a directory path");
  const cacheSize = options.cacheSize ?? DEFAULT_DISK_CACHE_SIZE;
  if (!Number.isSafeInteger(cacheSize) || cacheSize < 1) {
    throw new EddyError("INVALID_STATE_BACKEND", `state.backend.disk.cache-size must be a positive integer, got ${String(cacheSize)}`);
  }
  const cacheBytes = options.cacheBytes;
  if (cacheBytes !== undefined && (!Number.isSafeInteger(cacheBytes) || cacheBytes < 1)) {
    throw new EddyError("INVALID_STATE_BACKEND", `state.backend.disk.cache-bytes must be a positive integer, got ${String(cacheBytes)}`);
  }
  const incremental = options.incremental ?? true;
  if (typeof incremental !== "boolean") throw new EddyError("INVALID_STATE_BACKEND", `state.backend.disk.incremental must be true or false, got ${String(incremental)}`);
  const maxChainLength = checkMaxChainLength(options.maxChainLength ?? DEFAULT_MAX_CHAIN_LENGTH, "state.backend.disk.max-chain-length");
  const localRecovery = options.localRecovery ?? false;
  if (typeof localRecovery !== "boolean") throw new EddyError("INVALID_STATE_BACKEND", `state.backend.disk.local-recovery must be true or false, got ${String(localRecovery)}`);
  if (localRecovery && !incremental) throw new EddyError("INVALID_STATE_BACKEND", "state.backend.disk.local-recovery needs incremental checkpoints (state.backend.disk.incremental: true)");
  return { kind: "disk", dir: isAbsolute(dir) ? dir : resolve(dir), cacheSize, ...(cacheBytes === undefined ? {} : { cacheBytes }), incremental, maxChainLength, localRecovery };
}

/** The factory of a spec (undefined: the heap backend). */
export function stateBackendFactory(spec: StateBackendSpec | undefined): KeyedStateBackendFactory {
  if (spec === undefined) return heapStateBackend;
  if (spec.kind === "heap") {
    if (spec.incremental !== true) return heapStateBackend;
    const incrementalCheckpoints = { maxChainLength: spec.maxChainLength ?? DEFAULT_MAX_CHAIN_LENGTH };
    return (options) => new HeapKeyedStateBackend({ ...options, incrementalCheckpoints });
  }
  return diskStateBackend({
    dir: spec.dir,
    cacheSize: spec.cacheSize,
    cacheBytes: spec.cacheBytes,
    incremental: spec.incremental,
    maxChainLength: spec.maxChainLength,
    localRecovery: spec.localRecovery,
  });
}
