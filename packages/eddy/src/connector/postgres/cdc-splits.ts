/**
 * The splits of the PostgreSQL CDC source, as persisted in checkpoints (each with a version `v`;
 * the parse functions treat their input as hostile), and the key ranges they cover.
 *
 * - A snapshot split is a primary-key range (after, upTo] of one table. It is read under a
 *   snapshot of its own, exported by a temporary replication slot created for it: the slot's
 *   consistent point L is where that snapshot sits in the log (a transaction is in the snapshot
 *   exactly when its commit record is before L). A split read over several attempts (a restore in
 *   the middle) has one such part per attempt: `parts`, each a key range with its L.
 * - The stream split is the change stream of the job's slot from `lsn` on. A change of a key that
 *   a snapshot part covers is passed on only when its transaction commits at or after the part's
 *   L (older ones are in the rows the snapshot emitted): so each row's history is seen exactly
 *   once, snapshot then changes, whatever the order the splits were read in.
 */
import { EddyError } from "../../core/errors.ts";

export const CDC_SPLIT_VERSION = 1;

/** How a key column is compared: as an integer, as UTF-8 bytes (text read COLLATE "C"), or as a uuid's text. */
export type KeyType = "integer" | "text" | "uuid";

export interface CdcTable {
  /** `schema.name` */
  readonly name: string;
  readonly schema: string;
  readonly table: string;
  /** The primary key's column. */
  readonly key: string;
  readonly keyType: KeyType;
}

/** Keys k with after < k ≤ upTo, as text; null: unbounded. */
export interface KeyRange {
  readonly after: string | null;
  readonly upTo: string | null;
}

export interface SnapshotPart extends KeyRange {
  /** The consistent point of the snapshot the part was read under. */
  readonly lsn: string;
}

export interface SnapshotSplit extends KeyRange {
  readonly v: 1;
  readonly kind: "snapshot";
  readonly splitId: string;
  readonly table: CdcTable;
  /** The last key emitted (whole fetches only); null: none yet. */
  readonly cursor: string | null;
  /** The key ranges up to `cursor` already emitted, with the snapshot each was read under. */
  readonly parts: readonly SnapshotPart[];
}

export interface ColumnSchema {
  readonly name: string;
  readonly typeOid: number;
}

export interface StreamSplit {
  readonly v: 1;
  readonly kind: "stream";
  readonly splitId: "stream";
  readonly tables: readonly CdcTable[];
  /** Where the stream resumes: the end of the last transaction passed on whole (or a keepalive's position between transactions). */
  readonly lsn: string;
  /** A transaction partly passed on at the checkpoint: its commit LSN and how many of its changes were. */
  readonly txn?: { readonly finalLsn: string; readonly seen: number };
  /** Snapshot parts by table whose L the stream has not passed yet. */
  readonly parts: Readonly<Record<string, readonly SnapshotPart[]>>;
  /** The columns of each table as last seen, so a type change is caught after a restore too. */
  readonly schemas: Readonly<Record<string, readonly ColumnSchema[]>>;
}

/** A snapshot split a reader finished: kept in its state and sent to the enumerator again after a restore, until the stream starts. */
export interface FinishedSplit {
  readonly v: 1;
  readonly kind: "finished";
  readonly splitId: string;
  readonly table: string;
  readonly parts: readonly SnapshotPart[];
}

export type CdcSplit = SnapshotSplit | StreamSplit | FinishedSplit;

const utf8 = (s: string): Buffer => Buffer.from(s, "utf8");

/** Compares two keys of `type` the way PostgreSQL orders them (text as COLLATE "C"). */
export function compareKeys(type: KeyType, a: string, b: string): number {
  if (type === "integer") {
    const x = BigInt(a);
    const y = BigInt(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (type === "uuid") return a.toLowerCase() < b.toLowerCase() ? -1 : a.toLowerCase() > b.toLowerCase() ? 1 : 0;
  return Buffer.compare(utf8(a), utf8(b));
}

export function inRange(type: KeyType, key: string, range: KeyRange): boolean {
  return (range.after === null || compareKeys(type, key, range.after) > 0) && (range.upTo === null || compareKeys(type, key, range.upTo) <= 0);
}

const corrupt = (what: string, value: unknown): EddyError =>
  new EddyError("CHECKPOINT_CORRUPT", `a PostgreSQL CDC ${what} in the checkpoint is not one this version reads: ${JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))?.slice(0, 200)}`);

const str = (x: unknown): x is string => typeof x === "string";
const strOrNull = (x: unknown): x is string | null => x === null || typeof x === "string";
const lsnText = (x: unknown): x is string => typeof x === "string" && /^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/i.test(x);

function isTable(t: unknown): t is CdcTable {
  const x = t as Partial<CdcTable> | null;
  return x !== null && typeof x === "object" && str(x.name) && str(x.schema) && str(x.table) && str(x.key) && (x.keyType === "integer" || x.keyType === "text" || x.keyType === "uuid");
}

function isPart(p: unknown): p is SnapshotPart {
  const x = p as Partial<SnapshotPart> | null;
  return x !== null && typeof x === "object" && strOrNull(x.after) && strOrNull(x.upTo) && lsnText(x.lsn);
}

/** A split as recorded in a checkpoint; throws CHECKPOINT_CORRUPT for anything else. */
export function parseCdcSplit(value: unknown): CdcSplit {
  const s = value as Record<string, unknown> | null;
  if (s === null || typeof s !== "object" || s.v !== CDC_SPLIT_VERSION || !str(s.splitId)) throw corrupt("split", value);
  const parts = (p: unknown): p is SnapshotPart[] => Array.isArray(p) && p.every(isPart);
  if (s.kind === "snapshot" && isTable(s.table) && strOrNull(s.after) && strOrNull(s.upTo) && strOrNull(s.cursor) && parts(s.parts)) return s as unknown as SnapshotSplit;
  if (s.kind === "finished" && str(s.table) && parts(s.parts)) return s as unknown as FinishedSplit;
  if (
    s.kind === "stream" &&
    Array.isArray(s.tables) &&
    s.tables.every(isTable) &&
    lsnText(s.lsn) &&
    (s.txn === undefined || (typeof s.txn === "object" && s.txn !== null && lsnText((s.txn as { finalLsn?: unknown }).finalLsn) && Number.isSafeInteger((s.txn as { seen?: unknown }).seen))) &&
    typeof s.parts === "object" &&
    s.parts !== null &&
    Object.values(s.parts).every(parts) &&
    typeof s.schemas === "object" &&
    s.schemas !== null
  ) {
    return s as unknown as StreamSplit;
  }
  throw corrupt("split", value);
}
