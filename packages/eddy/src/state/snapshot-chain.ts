/**
 * What both keyed state backends share to take incremental snapshots (incremental-snapshot.ts
 * describes them): the chain's bookkeeping, and the writers of a base's and a delta's key group.
 */
import type { ByteWriter } from "../core/codec/bytes.ts";
import { defaultCodec } from "../core/codec/default-codec.ts";
import { EddyError } from "../core/errors.ts";
import type { Key } from "../core/key.ts";
import type { CellColumns, HeapKeyedStateSnapshot } from "./heap-snapshot.ts";
import { writeDeltaHeader, type SharedFileRef } from "./incremental-snapshot.ts";
import type { KeyedStateMeta } from "./keyed-state-meta.ts";

/**
 * `value` as a chain's `maxChainLength` (deltas after a base before the next base; 0: every
 * snapshot a base), or INVALID_STATE_BACKEND naming the configuration key `key` it came from.
 */
export function checkMaxChainLength(value: number, key: string): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new EddyError("INVALID_STATE_BACKEND", `${key} must be a non-negative integer, got ${String(value)}`);
  return value;
}

/**
 * One backend's chain of incremental snapshots: whether the next is a base or a delta, and the
 * chain each snapshot extends. Both backends keep one; what they record between snapshots (the
 * keys changed outside their maps, the keys removed) is theirs.
 */
export class SnapshotChain {
  readonly #maxChainLength: number;
  /** The next snapshot must be a base (nothing to chain on, or the changes were lost track of). */
  #needBase = true;
  /** Deltas since the last base. */
  #length = 0;
  /** The chain the last snapshot completes, once its file is written (undefined: it failed). */
  #chain: Promise<readonly SharedFileRef[] | undefined> = Promise.resolve(undefined);

  /** `maxChainLength`: deltas after a base before the next base (checkMaxChainLength; `key` names it in the error). */
  constructor(maxChainLength: number, key: string) {
    this.#maxChainLength = checkMaxChainLength(maxChainLength, key);
  }

  /**
   * Whether the next snapshot is a base whatever happens until then (before the first, after a
   * restore or a failure): a backend records no changes meanwhile, so a job without checkpoints
   * never grows what it records.
   */
  get needsBase(): boolean {
    return this.#needBase;
  }

  /** The next snapshot must be a base (a restore; every stored value changed). */
  restart(): void {
    this.#needBase = true;
  }

  /**
   * Begins the shared part of `snapshot` (taken now): base or delta, the chain it extends, and its
   * `settle`, which calls `settled(chain)` once. A snapshot released before it settles counts as
   * failed. A failed snapshot (settled with undefined) makes the next one a base.
   */
  begin(snapshot: HeapKeyedStateSnapshot, settled: (chain: readonly SharedFileRef[] | undefined) => void): {
    readonly base: boolean;
    readonly previous: Promise<readonly SharedFileRef[] | undefined>;
    readonly settle: (chain: readonly SharedFileRef[] | undefined) => void;
  } {
    const base = this.#needBase || this.#length >= this.#maxChainLength;
    const previous = base ? Promise.resolve([]) : this.#chain;
    let complete!: (chain: readonly SharedFileRef[] | undefined) => void;
    this.#chain = new Promise((resolve) => (complete = resolve));
    this.#needBase = false;
    this.#length = base ? 0 : this.#length + 1;
    let done = false;
    const settle = (chain: readonly SharedFileRef[] | undefined): void => {
      if (done) return;
      done = true;
      if (chain === undefined) this.#needBase = true;
      settled(chain);
      complete(chain);
    };
    const release = snapshot.release.bind(snapshot);
    snapshot.release = () => {
      settle(undefined);
      release();
    };
    return { base, previous, settle };
  }
}

/** A base's key group: the canonical one (heap-snapshot.ts), or false when no state has a cell in it. */
export function writeBaseKeyGroup(snapshot: HeapKeyedStateSnapshot, keyGroup: number, out: ByteWriter): boolean {
  if (!snapshot.hasKeyGroup(keyGroup)) return false;
  snapshot.writeKeyGroup(keyGroup, out);
  return true;
}

/** The changes of one state in one key group: its changed keys and, as of the snapshot, their cells. */
export interface StateChanges {
  readonly meta: KeyedStateMeta;
  /** Every changed key (a key removed is changed and has no cells). */
  readonly keys: readonly Key[];
  readonly cells: CellColumns;
}

/**
 * Writes a delta key group (the layout of incremental-snapshot.ts) from the states with changes,
 * or nothing and returns false when none has any.
 */
export function writeDeltaKeyGroup(changes: readonly StateChanges[], out: ByteWriter): boolean {
  if (changes.length === 0) return false;
  writeDeltaHeader(changes.map(({ meta, keys }) => ({ name: meta.name, keys })), out);
  out.varuint(changes.length);
  const codec = defaultCodec();
  for (const { meta, cells } of changes) {
    out.string(meta.name);
    cells.write(codec, out);
  }
  return true;
}
