/**
 * The splits of the PostgreSQL CDC source, as persisted in checkpoints (each with a version `v`;
 * the parse functions treat their input as hostile), and the key ranges they cover.
 *
 * - A snapshot split is a primary-key range (after, upTo] of one table (for a composite key, a
 *   range of key tuples in row-value order: (a, b) > (a0, b0), as PostgreSQL compares rows). It is read under a
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
import { ident } from "./cdc-connection.ts";

export const CDC_SPLIT_VERSION = 1;

/** How a key column is compared: as an integer, as UTF-8 bytes (text read COLLATE "C"), or as a uuid's text. */
export type KeyType = "integer" | "text" | "uuid";

export interface KeyColumn {
  readonly name: string;
  readonly type: KeyType;
}

export interface CdcTable {
  /** `schema.name` */
  readonly name: string;
  readonly schema: string;
  readonly table: string;
  /** The primary key's (first) column, and its type. */
  readonly key: string;
  readonly keyType: KeyType;
  /** A composite primary key's columns in key order (two or more); absent for a key of one column. */
  readonly keyColumns?: readonly KeyColumn[];
}

/** A key as text: the column's value, or for a composite key each column's value in key order. */
export type KeyValue = string | readonly string[];

/** Keys k with after < k ≤ upTo (row-value order for a composite key); null: unbounded. */
export interface KeyRange {
  readonly after: KeyValue | null;
  readonly upTo: KeyValue | null;
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
  readonly cursor: KeyValue | null;
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

/** The key's columns in key order (one for a single-column key). */
export function keyColumnsOf(table: CdcTable): readonly KeyColumn[] {
  return table.keyColumns ?? [{ name: table.key, type: table.keyType }];
}

/** The key of a row (the columns' text at `indexes`, in key order), or undefined when a column is missing (an unchanged TOASTed value). */
export function keyOf(values: readonly (string | null | undefined)[], indexes: readonly number[]): KeyValue | undefined {
  if (indexes.length === 1) {
    const v = values[indexes[0]!];
    return typeof v === "string" ? v : undefined;
  }
  const key: string[] = [];
  for (const i of indexes) {
    const v = values[i];
    if (typeof v !== "string") return undefined;
    key.push(v);
  }
  return key;
}

/** The key columns in SQL, for ORDER BY and row comparisons: text compared COLLATE "C" (byte order, as compareKeys). */
export function keyOrderSql(columns: readonly KeyColumn[]): string {
  return columns.map((c) => `${ident(c.name)}${c.type === "text" ? ' COLLATE "C"' : ""}`).join(", ");
}

const CAST: Record<KeyType, string> = { integer: "::bigint", text: "::text", uuid: "::uuid" };

/** `(k1, k2) <op> ($n::t1, $n+1::t2)`: a row comparison of the key with `key`, its values appended to `params`. */
export function keyCondition(columns: readonly KeyColumn[], op: ">" | "<=", key: KeyValue, params: unknown[]): string {
  const values = typeof key === "string" ? [key] : key;
  const placeholders = columns.map((c, i) => `$${params.push(values[i])}${CAST[c.type]}`);
  return `(${keyOrderSql(columns)}) ${op} (${placeholders.join(", ")})`;
}

export function sameKey(a: KeyValue | null, b: KeyValue | null): boolean {
  if (a === null || b === null || typeof a === "string" || typeof b === "string") return a === b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** A key as text for messages and positions: composite keys as (a, b). */
export function keyText(key: KeyValue): string {
  return typeof key === "string" ? key : `(${key.join(", ")})`;
}

/** Compares two keys the way PostgreSQL orders them (text as COLLATE "C"; composite keys column by column, as row values). */
export function compareKeys(columns: readonly KeyColumn[], a: KeyValue, b: KeyValue): number {
  if (typeof a === "string" || typeof b === "string") return compareKey(columns[0]!.type, String(a), String(b));
  for (let i = 0; i < columns.length; i++) {
    const c = compareKey(columns[i]!.type, a[i]!, b[i]!);
    if (c !== 0) return c;
  }
  return 0;
}

function compareKey(type: KeyType, a: string, b: string): number {
  if (type === "integer") {
    const x = BigInt(a);
    const y = BigInt(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (type === "uuid") return a.toLowerCase() < b.toLowerCase() ? -1 : a.toLowerCase() > b.toLowerCase() ? 1 : 0;
  return Buffer.compare(utf8(a), utf8(b));
}

export function inRange(columns: readonly KeyColumn[], key: KeyValue, range: KeyRange): boolean {
  return (range.after === null || compareKeys(columns, key, range.after) > 0) && (range.upTo === null || compareKeys(columns, key, range.upTo) <= 0);
}

const corrupt = (what: string, value: unknown): EddyError =>
  new EddyError("CHECKPOINT_CORRUPT", `a PostgreSQL CDC ${what} in the checkpoint is not one this version reads: ${JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))?.slice(0, 200)}`);

const str = (x: unknown): x is string => typeof x === "string";
const lsnText = (x: unknown): x is string => typeof x === "string" && /^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/i.test(x);

const isKeyType = (x: unknown): x is KeyType => x === "integer" || x === "text" || x === "uuid";

/** A part whose table is not known here: keys are strings, tuples of strings, or null. */
function isLoosePart(p: unknown): boolean {
  const x = p as Partial<SnapshotPart> | null;
  const key = (k: unknown): boolean => k === null || str(k) || (Array.isArray(k) && k.length >= 2 && k.every(str));
  return x !== null && typeof x === "object" && key(x.after) && key(x.upTo) && lsnText(x.lsn);
}

function isTable(t: unknown): t is CdcTable {
  const x = t as Partial<CdcTable> | null;
  if (x === null || typeof x !== "object" || !str(x.name) || !str(x.schema) || !str(x.table) || !str(x.key) || !isKeyType(x.keyType)) return false;
  if (x.keyColumns === undefined) return true;
  const cols = x.keyColumns as unknown;
  return Array.isArray(cols) && cols.length >= 2 && cols.every((c: Partial<KeyColumn> | null) => c !== null && typeof c === "object" && str(c.name) && isKeyType(c.type)) && cols[0].name === x.key;
}

/** A key of `table` (a string, or a tuple of its key columns' count), or null where allowed. */
function isKey(table: CdcTable, k: unknown, nullable: boolean): boolean {
  if (k === null) return nullable;
  const n = keyColumnsOf(table).length;
  return n === 1 ? str(k) : Array.isArray(k) && k.length === n && k.every(str);
}

function isPart(table: CdcTable, p: unknown): p is SnapshotPart {
  const x = p as Partial<SnapshotPart> | null;
  return x !== null && typeof x === "object" && isKey(table, x.after, true) && isKey(table, x.upTo, true) && lsnText(x.lsn);
}

/** A split as recorded in a checkpoint; throws CHECKPOINT_CORRUPT for anything else. */
export function parseCdcSplit(value: unknown): CdcSplit {
  const s = value as Record<string, unknown> | null;
  if (s === null || typeof s !== "object" || s.v !== CDC_SPLIT_VERSION || !str(s.splitId)) throw corrupt("split", value);
  const parts = (table: CdcTable | undefined, p: unknown): p is SnapshotPart[] => Array.isArray(p) && p.every((x) => (table === undefined ? isLoosePart(x) : isPart(table, x)));
  if (s.kind === "snapshot" && isTable(s.table) && isKey(s.table, s.after, true) && isKey(s.table, s.upTo, true) && isKey(s.table, s.cursor, true) && parts(s.table, s.parts)) return s as unknown as SnapshotSplit;
  // A finished split names its table only: its parts' keys are checked where the stream split takes them.
  if (s.kind === "finished" && str(s.table) && parts(undefined, s.parts)) return s as unknown as FinishedSplit;
  if (
    s.kind === "stream" &&
    Array.isArray(s.tables) &&
    s.tables.every(isTable) &&
    lsnText(s.lsn) &&
    (s.txn === undefined || (typeof s.txn === "object" && s.txn !== null && lsnText((s.txn as { finalLsn?: unknown }).finalLsn) && Number.isSafeInteger((s.txn as { seen?: unknown }).seen))) &&
    typeof s.parts === "object" &&
    s.parts !== null &&
    Object.entries(s.parts).every(([name, p]) => parts((s.tables as CdcTable[]).find((t) => t.name === name), p)) &&
    typeof s.schemas === "object" &&
    s.schemas !== null
  ) {
    return s as unknown as StreamSplit;
  }
  throw corrupt("split", value);
}
