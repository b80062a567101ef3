/**
 * The bytes of the heap backend's keyed state, one key group at a time (snapshots are written per
 * key group so a restoring subtask reads only the groups it owns: docs/design/savepoints.md,
 * "The directory" and "How a savepoint is restored").
 *
 *   keyGroup := varuint numStates, state × numStates       (only states with cells in the group)
 *   state    := string name, varuint numCells, keys, namespaces, payloads, [ttl × numCells]
 *   keys, namespaces, payloads := one batch of numCells values in the default codec
 *                 ("eddy.default/3", core/codec/default-codec.ts: column-wise per record shape,
 *                 so field names and repeated strings are written once per batch, not per cell)
 *   ttl      := f64 expiresAt, then by kind:                 (only for states with a TTL)
 *                 list: varuint n, f64 × n (per element)
 *                 map:  varuint n, (value userKey, f64) × n         (value: value-codec.ts)
 *                 else: nothing
 *
 * The payload is the value as stored: the value or accumulator; an array for list state; a Map
 * for map state. Kind, TTL and copy mode of each state are not repeated per group: they travel in
 * the snapshot's metadata (`KeyedStateMeta`). Unless a state's TTL says `cleanup.fullSnapshot:
 * false`, what expired when the snapshot was taken is left out: whole cells, and the expired
 * elements of lists and entries of maps (the layout is the same either way).
 */
import type { ByteReader, ByteWriter } from "../core/codec/bytes.ts";
import { decodeValue, encodeValue } from "../core/codec/value-codec.ts";
import { defaultCodec } from "../core/codec/default-codec.ts";
import type { BatchCodec } from "../core/codec/codec.ts";
import { EddyError } from "../core/errors.ts";
import type { Key } from "../core/key.ts";
import type { ResolvedTtl, StateKind } from "./descriptors.ts";
import type { SharedKeyedSnapshot } from "./incremental-snapshot.ts";
import type { KeyedStateMeta } from "./keyed-state-meta.ts";
import { Cell, type Namespace, type TableCapture } from "./state-table.ts";

export interface CapturedState {
  readonly meta: KeyedStateMeta;
  readonly capture: TableCapture;
  /** Leave out what expired (the TTL's cleanup.fullSnapshot). */
  readonly dropExpired: boolean;
}

/**
 * A frozen view of every keyed state of one backend (copy-on-write; see state-table.ts). Taking
 * it is the synchronous part of a checkpoint; `writeKeyGroup` is the asynchronous part, called
 * while the task goes on processing. `release()` when done (also on failure).
 */
export class HeapKeyedStateSnapshot {
  readonly keyGroupRange: { readonly start: number; readonly end: number };
  readonly states: readonly KeyedStateMeta[];
  /** Set by a backend that writes this snapshot incrementally (the disk backend). */
  shared: SharedKeyedSnapshot | undefined = undefined;
  readonly #captured: readonly CapturedState[];
  /** Processing time when taken: cells expired by then are left out. */
  readonly #now: number;
  readonly #codec: BatchCodec = defaultCodec();

  constructor(keyGroupRange: { start: number; end: number }, captured: readonly CapturedState[], now: number) {
    this.keyGroupRange = keyGroupRange;
    this.#captured = captured;
    this.states = captured.map((c) => c.meta);
    this.#now = now;
  }

  /** Whether any state has a cell in `keyGroup`. */
  hasKeyGroup(keyGroup: number): boolean {
    const index = keyGroup - this.keyGroupRange.start;
    return this.#captured.some((c) => c.capture.size(index) > 0);
  }

  /** Appends key group `keyGroup` in the format of the file comment. */
  writeKeyGroup(keyGroup: number, out: ByteWriter): void {
    const index = keyGroup - this.keyGroupRange.start;
    const present = this.#captured.filter((c) => c.capture.size(index) > 0);
    out.varuint(present.length);
    for (const { meta, capture, dropExpired } of present) {
      out.string(meta.name);
      writeCells(capture, index, meta, dropExpired ? this.#now : Number.NEGATIVE_INFINITY, this.#codec, out);
    }
  }

  /** Gives key group `keyGroup` back once written: keys touched from now on are not copied for this snapshot. */
  releaseKeyGroup(keyGroup: number): void {
    const index = keyGroup - this.keyGroupRange.start;
    for (const c of this.#captured) c.capture.releaseGroup(index);
  }

  release(): void {
    for (const c of this.#captured) c.capture.release();
  }
}

/** `now`: what expired by then is left out (-Infinity: nothing is). Captured cells are never modified. */
export function writeCells(capture: Pick<TableCapture, "forEachCell">, index: number, meta: KeyedStateMeta, now: number, codec: BatchCodec, out: ByteWriter): void {
  const columns = new CellColumns(meta, now);
  // keepFrozen: a map cell changed since the capture comes as a FrozenMap (only without TTL, so
  // never one unexpiredElements reads), which the default codec writes as the Map it was.
  capture.forEachCell(index, columns.add, undefined, true);
  columns.write(codec, out);
}

/**
 * The cells of one state in one key group, gathered column-wise as `state` of the file comment
 * writes them: `add` (a CellVisitor) takes a cell, leaving out what expired at `now` (-Infinity:
 * nothing), and `write` writes them all.
 */
export class CellColumns {
  readonly #meta: KeyedStateMeta;
  readonly #now: number;
  readonly #hasTtl: boolean;
  readonly #keys: Key[] = [];
  readonly #namespaces: Namespace[] = [];
  readonly #payloads: unknown[] = [];
  readonly #expiresAts: number[] = [];
  readonly #expiries: Cell["expiry"][] = [];

  constructor(meta: KeyedStateMeta, now: number) {
    this.#meta = meta;
    this.#now = now;
    this.#hasTtl = meta.ttl !== undefined;
  }

  readonly add = (key: Key, ns: Namespace, value: unknown, expiresAt: number, expiry: Cell["expiry"]): void => {
    const hasTtl = this.#hasTtl;
    const now = this.#now;
    if (hasTtl && expiresAt <= now) return;
    if (hasTtl && expiry !== undefined && now !== Number.NEGATIVE_INFINITY) {
      const live = unexpiredElements(this.#meta.kind, value, expiry, now);
      if (live !== undefined) {
        if (live.empty) return;
        value = live.value;
        expiry = live.expiry;
      }
    }
    this.#keys.push(key);
    this.#namespaces.push(ns);
    this.#payloads.push(value);
    if (hasTtl) {
      this.#expiresAts.push(expiresAt);
      this.#expiries.push(expiry);
    }
  };

  write(codec: BatchCodec, out: ByteWriter): void {
    out.varuint(this.#keys.length);
    codec.encode(this.#keys, out);
    codec.encode(this.#namespaces, out);
    codec.encode(this.#payloads, out);
    const expiresAts = this.#expiresAts;
    for (let i = 0; i < expiresAts.length; i++) writeTtl(this.#meta.kind, expiresAts[i]!, this.#expiries[i], out);
  }
}

/**
 * The elements of a list cell or entries of a map cell that have not expired at `now`, as fresh
 * collections; undefined when none expired (the captured collections are written as they are).
 */
function unexpiredElements(
  kind: StateKind,
  value: unknown,
  expiry: number[] | Map<unknown, number>,
  now: number,
): { value: unknown; expiry: number[] | Map<unknown, number>; empty: boolean } | undefined {
  if (kind === "list") {
    const exps = expiry as number[];
    if (exps.every((e) => e > now)) return undefined;
    const values = value as unknown[];
    const keptValues: unknown[] = [];
    const keptExps: number[] = [];
    for (let i = 0; i < values.length; i++) {
      if (exps[i]! > now) {
        keptValues.push(values[i]);
        keptExps.push(exps[i]!);
      }
    }
    return { value: keptValues, expiry: keptExps, empty: keptValues.length === 0 };
  }
  if (kind === "map") {
    const exps = expiry as Map<unknown, number>;
    let anyExpired = false;
    for (const e of exps.values()) if (e <= now) anyExpired = true;
    if (!anyExpired) return undefined;
    const map = value as Map<unknown, unknown>;
    const keptMap = new Map<unknown, unknown>();
    const keptExps = new Map<unknown, number>();
    for (const [k, e] of exps) {
      if (e > now) {
        keptMap.set(k, map.get(k));
        keptExps.set(k, e);
      }
    }
    return { value: keptMap, expiry: keptExps, empty: keptMap.size === 0 };
  }
  return undefined;
}

function writeTtl(kind: StateKind, expiresAt: number, expiry: Cell["expiry"], out: ByteWriter): void {
  out.f64(expiresAt);
  if (kind === "list") {
    const exps = (expiry as number[] | undefined) ?? [];
    out.varuint(exps.length);
    for (const e of exps) out.f64(e);
  } else if (kind === "map") {
    const exps = (expiry as Map<unknown, number> | undefined) ?? new Map<unknown, number>();
    out.varuint(exps.size);
    for (const [k, e] of exps) {
      encodeValue(k, out);
      out.f64(e);
    }
  }
}

/** One decoded cell of a key group, as `readKeyGroup` reports it. */
export interface RestoredCell {
  readonly key: Key;
  readonly namespace: Namespace;
  readonly cell: Cell;
}

/**
 * Reads one key group written by `writeKeyGroup`, calling `onState(name)` to learn each state's
 * meta (undefined: the snapshot does not describe it, which is corrupt) and `onCell` per cell.
 */
export function readKeyGroup(
  input: ByteReader,
  metaOf: (name: string) => KeyedStateMeta | undefined,
  onCell: (meta: KeyedStateMeta, restored: RestoredCell) => void,
): void {
  const numStates = input.varuint();
  for (let s = 0; s < numStates; s++) {
    const name = input.string();
    const meta = metaOf(name);
    if (meta === undefined) {
      throw new EddyError("CHECKPOINT_CORRUPT", `keyed state '${name}' in a key group is not described by the snapshot`);
    }
    const numCells = input.varuint();
    const codec = defaultCodec();
    const keys = codec.decode(input, numCells) as Key[];
    const namespaces = codec.decode(input, numCells) as Namespace[];
    const payloads = codec.decode(input, numCells);
    for (let c = 0; c < numCells; c++) {
      const key = keys[c]!;
      const namespace = namespaces[c]!;
      const value = payloads[c];
      let expiresAt = Number.POSITIVE_INFINITY;
      let expiry: number[] | Map<unknown, number> | undefined;
      if (meta.ttl !== undefined) {
        expiresAt = input.f64();
        if (meta.kind === "list") {
          const n = input.varuint();
          const exps: number[] = [];
          for (let i = 0; i < n; i++) exps.push(input.f64());
          expiry = exps;
        } else if (meta.kind === "map") {
          const n = input.varuint();
          const exps = new Map<unknown, number>();
          for (let i = 0; i < n; i++) exps.set(decodeValue(input), input.f64());
          expiry = exps;
        }
      }
      onCell(meta, { key, namespace, cell: new Cell(value, expiresAt, expiry) });
    }
  }
}
