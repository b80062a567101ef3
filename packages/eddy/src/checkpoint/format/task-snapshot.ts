/**
 * The task snapshot file's format: what a task writes for a checkpoint, inside the container
 * (container.ts). Its metadata (JSON) describes each operator of the task (OperatorSnapshotMeta);
 * its sections hold, per operator, one section per key group of keyed state (cells in the format
 * named by each state's `format`, state/keyed-state-meta.ts) and one section with its operator
 * list states. The manifest lists one TaskSnapshotHandle per task. Written by
 * runtime/checkpointing.ts's serializeTaskSnapshot; read by the executor's restore and the
 * savepoint reader. Docs: docs/design/checkpoint-files.md.
 */
import { ByteReader } from "../../core/codec/bytes.ts";
import { decodeValue } from "../../core/codec/value-codec.ts";
import type { KeyedStateMeta } from "../../state/keyed-state-meta.ts";
import type { FileRef } from "../storage.ts";
import { checkpointCorrupt } from "./container.ts";

/**
 * How operator state is redistributed on restore: `split` lists are divided round-robin, `union`
 * lists are given whole to every subtask, and `broadcast` state (the entries of one broadcast map
 * state, equal in every old subtask) is taken by new subtask i from old subtask i mod the old
 * parallelism, as Flink's OperatorStateHandle.Mode.BROADCAST.
 */
export type OperatorStateMode = "split" | "union" | "broadcast";

/** Section names of a task snapshot file (see writeTaskSnapshot). */
export const keyedSection = (operatorId: string): string => `${operatorId}/keyed`;
export const operatorStateSection = (operatorId: string): string => `${operatorId}/operator-state`;

/** What a task snapshot file's metadata says about one operator (JSON). */
export interface OperatorSnapshotMeta {
  readonly operatorId: string;
  readonly operatorName: string;
  readonly keyed?: {
    readonly keyGroupRange: { readonly start: number; readonly end: number };
    readonly states: readonly KeyedStateMeta[];
    /** The watermark, or null for −∞ (JSON has no infinities). */
    readonly watermark: number | null;
    /**
     * Incremental checkpoints (state/incremental-snapshot.ts): the keyed state is in these shared
     * files (a base, then deltas, oldest first). Their kinds say where the timers are
     * (keyed-chain.ts): version 2 holds them too, and the task file has no key-group section of
     * the operator; in version 1 the task file's key-group sections hold an empty state part and
     * the timers.
     */
    readonly incremental?: { readonly chain: readonly FileRef[] };
  };
  readonly operatorStates: readonly { readonly name: string; readonly mode: OperatorStateMode; readonly count: number }[];
}

export interface TaskSnapshotSection {
  readonly name: string;
  readonly keyGroup?: number;
  readonly bytes: Uint8Array;
}

/** What a task reports when its snapshot for a checkpoint is persisted (TaskAck.state); the manifest lists one per task. */
export interface TaskSnapshotHandle {
  readonly taskId: string;
  readonly chain: number;
  readonly subtask: number;
  /** The task's snapshot file, or null when no operator of the task has state. */
  readonly file: FileRef | null;
  readonly operators: readonly OperatorSnapshotMeta[];
}

/** Decodes an operator-state section: one array of values per operator state, in meta order. */
export function decodeOperatorStates(bytes: Uint8Array, meta: OperatorSnapshotMeta): Map<string, unknown[]> {
  const lists = decodeValue(new ByteReader(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  if (!Array.isArray(lists) || lists.length !== meta.operatorStates.length) {
    throw checkpointCorrupt(`operator state of '${meta.operatorName}' does not match its description`);
  }
  const out = new Map<string, unknown[]>();
  meta.operatorStates.forEach((o, i) => {
    const list = lists[i];
    // The count is the manifest's word, validated only against the file's size: check it here.
    if (!Array.isArray(list) || list.length !== o.count) {
      throw checkpointCorrupt(`operator state '${o.name}' of '${meta.operatorName}' holds ${Array.isArray(list) ? `${list.length} values` : "no list"}, its description says ${o.count}`);
    }
    out.set(o.name, list);
  });
  return out;
}
