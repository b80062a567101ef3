/**
 * Incremental checkpoints of keyed state (issue 29; docs/design/disk-state.md, "Incremental
 * checkpoints"): what a backend's snapshot gives besides the canonical format, and the byte
 * layout of a change set.
 *
 * A backend that checkpoints incrementally (the disk backend; the heap backend when asked) writes its keyed state, per operator
 * subtask and checkpoint, into one *shared file* instead of the task's snapshot file: either a
 * **base** (every key group in the canonical format of heap-snapshot.ts) or a **delta** (per key
 * group, only the keys whose state changed since the previous snapshot of the chain). A
 * checkpoint's manifest lists, per operator subtask, its *chain*: the base and the deltas after
 * it, oldest first; restoring a key group applies them in order (checkpoint/format/keyed-chain.ts).
 * Files are shared between the checkpoints whose chains list them; the coordinator counts
 * references (checkpoint/shared-state-registry.ts) and deletes a file once no retained checkpoint
 * lists it. A base every `maxChainLength` deltas bounds the chain, and so restore time. The same
 * file carries the operator's timers, in `timers` sections beside the `keyed` ones (written by the
 * task from the timer service, checkpoint/format/timers.ts), base or delta as the backend chose.
 *
 * Delta key group (one shared-file section):
 *
 *   delta    := varuint numStates, (string name, varuint numChanged, keys) × numStates, keyGroup
 *   keys     := numChanged keys in the default codec (one batch)
 *   keyGroup := the canonical key group (heap-snapshot.ts) with every cell the changed keys hold
 *
 * Every changed key's old cells are dropped (all namespaces), then the cells of `keyGroup` added:
 * a key removed is changed and has no cells.
 */
import type { ByteReader, ByteWriter } from "../core/codec/bytes.ts";
import { defaultCodec } from "../core/codec/default-codec.ts";
import type { Key } from "../core/key.ts";

/** A shared file as a checkpoint lists it (checkpoint/storage.ts FileRef, structurally). */
export interface SharedFileRef {
  readonly name: string;
  readonly size: number;
  readonly sha256: string;
}

/** The shared-file part of an incremental snapshot (KeyedStateSnapshot.shared). */
export interface SharedKeyedSnapshot {
  /** `base`: every key group in the canonical format; `delta`: the changes since the previous snapshot of the chain. */
  readonly kind: "base" | "delta";
  /**
   * The chain this snapshot extends, once the previous snapshot's file is written: [] for a base;
   * undefined when the previous snapshot failed (this delta cannot be restored then: the caller
   * fails the checkpoint).
   */
  readonly previous: Promise<readonly SharedFileRef[] | undefined>;
  /**
   * Writes key group `keyGroup` (base: canonical, delta: the layout of the file comment) and
   * returns true, or writes nothing and returns false when it has nothing for the group.
   * Before the snapshot's `releaseKeyGroup` of the group.
   */
  writeKeyGroup(keyGroup: number, out: ByteWriter): boolean;
  /**
   * The outcome, once: the chain the snapshot's file completed (previous + its file), or
   * undefined when it was not written (the next snapshot is then a base). Called on release
   * with undefined if not called before.
   */
  settle(chain: readonly SharedFileRef[] | undefined): void;
}

/** Writes the changed-keys header of a delta key group: `changed` per state name (only states with changes). */
export function writeDeltaHeader(changed: readonly { readonly name: string; readonly keys: readonly Key[] }[], out: ByteWriter): void {
  out.varuint(changed.length);
  const codec = defaultCodec();
  for (const { name, keys } of changed) {
    out.string(name);
    out.varuint(keys.length);
    codec.encode(keys as Key[], out);
  }
}

/** Reads what writeDeltaHeader wrote: the changed keys per state name. The canonical key group follows in `input`. */
export function readDeltaHeader(input: ByteReader): Map<string, Key[]> {
  const n = input.varuint();
  const out = new Map<string, Key[]>();
  const codec = defaultCodec();
  for (let i = 0; i < n; i++) {
    const name = input.string();
    const count = input.varuint();
    out.set(name, codec.decode(input, count) as Key[]);
  }
  return out;
}
