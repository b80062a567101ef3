/**
 * The PostgreSQL CDC source's options and its records (docs/connectors/postgres-cdc.md), checked
 * once when the source is built.
 */
import { EddyError } from "../../core/errors.ts";
import type { NumericMode } from "./cdc-values.ts";
import type { PostgresConnection } from "./pg-client.ts";

/** Flink's RowKind: +I insert, -U the row before an update, +U the row after it, -D delete. */
export type ChangeOp = "insert" | "update_before" | "update_after" | "delete";
export type ChangeKind = "+I" | "-U" | "+U" | "-D";

/**
 * Whether a change adds its row to an aggregate (`+I`, `+U`) rather than retracting it (`-U`,
 * `-D`): Flink's RowDataUtil.isAccumulateMsg. A running sum over a changelog adds the row's value
 * times `isAccumulate(c) ? 1 : -1`.
 */
export function isAccumulate(change: { readonly kind: ChangeKind }): boolean {
  return change.kind === "+I" || change.kind === "+U";
}

export const KIND_OF: Readonly<Record<ChangeOp, ChangeKind>> = { insert: "+I", update_before: "-U", update_after: "+U", delete: "-D" };

/** One change of one row: what the source emits. */
export interface ChangeRecord<Row = Record<string, unknown>> {
  readonly op: ChangeOp;
  readonly kind: ChangeKind;
  /** `schema.table` */
  readonly table: string;
  /**
   * The row's columns (cdc-values.ts says how each type is mapped). A delete, and an update's
   * row before, carry every column only with `REPLICA IDENTITY FULL`; otherwise only the key's.
   */
  readonly row: Row;
  /** The LSN of the transaction's commit (snapshot rows: the LSN of the snapshot they were read in), as `X/Y`. */
  readonly lsn: string;
  /** Commit time, epoch ms (snapshot rows: when their snapshot was taken). The record's timestamp. */
  readonly commitTime: number;
  /** Whether the row comes from the initial snapshot. */
  readonly snapshot: boolean;
}

export interface PostgresCdcSourceOptions {
  /** A `pg` connection config or a connection string; the user needs the REPLICATION attribute (or superuser) and SELECT on the tables. */
  readonly connection: PostgresConnection;
  /** The tables, as `name` (schema public) or `schema.name`; each needs a primary key of one column (integer, text or uuid). */
  readonly tables: readonly string[];
  /** The replication slot (one per job: it is where the job's position lives on the server). */
  readonly slot: string;
  /** The publication listing the tables. */
  readonly publication: string;
  /** Create the slot when it does not exist (default true); false: it must exist. */
  readonly createSlot?: boolean;
  /** Create the publication (FOR TABLE the tables) when it does not exist (default true); false: it must exist and list the tables. */
  readonly createPublication?: boolean;
  /** "initial" (default): the tables' rows first, then their changes; "never": only changes from the slot's position. */
  readonly snapshot?: "initial" | "never";
  /** numeric columns as exact strings (default) or as bigint (a value with a fraction is then a bad record). */
  readonly numeric?: NumericMode;
  /** Rows per snapshot split (a key range read by one reader), default 100,000. */
  readonly splitRows?: number;
  /** Rows per snapshot query (and per emitted batch), default 4,096. */
  readonly fetchRows?: number;
  /** How often the stream reader reports its position to the server (standby status), default 10,000 ms. */
  readonly statusIntervalMs?: number;
  /**
   * A statement the stream reader runs every `heartbeatIntervalMs` on a connection of its own
   * (Debezium's heartbeat.action.query), e.g. an upsert into a heartbeat table: it writes to the
   * log, so the slot's position advances even when the source tables are quiet and the rest of
   * the database is too. `SELECT pg_logical_emit_message(false, 'eddy-heartbeat', '')` needs no
   * table (the source reads such messages). Default: none.
   */
  readonly heartbeatQuery?: string;
  /** Default 10,000 ms. */
  readonly heartbeatIntervalMs?: number;
}

export interface CdcConfig {
  readonly connection: PostgresConnection;
  readonly tables: readonly { readonly schema: string; readonly table: string }[];
  readonly slot: string;
  readonly publication: string;
  readonly createSlot: boolean;
  readonly createPublication: boolean;
  readonly snapshot: "initial" | "never";
  readonly numeric: NumericMode;
  readonly splitRows: number;
  readonly fetchRows: number;
  readonly statusIntervalMs: number;
  readonly heartbeatQuery: string | undefined;
  readonly heartbeatIntervalMs: number;
}

const invalid = (message: string): EddyError => new EddyError("INVALID_CDC_SOURCE", `PostgresCdcSource: ${message}`);

function positive(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 1) throw invalid(`${name} must be a positive integer, not ${JSON.stringify(v)}`);
  return v;
}

/** Slot names: lower-case letters, digits and underscores (PostgreSQL's rule), at most 63. */
const SLOT_NAME = /^[a-z0-9_]{1,63}$/;

export function cdcConfig(options: PostgresCdcSourceOptions): CdcConfig {
  if (options === null || typeof options !== "object") throw invalid("needs options { connection, tables, slot, publication, ... }");
  const { connection, slot, publication } = options;
  if (typeof connection !== "string" && (connection === null || typeof connection !== "object")) throw invalid("connection must be a connection string or a pg config object");
  if (!Array.isArray(options.tables) || options.tables.length === 0 || !options.tables.every((t) => typeof t === "string" && t.length > 0)) {
    throw invalid(`tables must be a non-empty array of table names, not ${JSON.stringify(options.tables)}`);
  }
  const tables = options.tables.map((t) => {
    const dot = t.indexOf(".");
    return dot < 0 ? { schema: "public", table: t } : { schema: t.slice(0, dot), table: t.slice(dot + 1) };
  });
  if (new Set(tables.map((t) => `${t.schema}.${t.table}`)).size !== tables.length) throw invalid(`tables name a table twice: ${JSON.stringify(options.tables)}`);
  if (typeof slot !== "string" || !SLOT_NAME.test(slot)) throw invalid(`slot must be 1-63 lower-case letters, digits or underscores, not ${JSON.stringify(slot)}`);
  if (typeof publication !== "string" || publication.length === 0) throw invalid(`publication must be a non-empty name, not ${JSON.stringify(publication)}`);
  const snapshot = options.snapshot ?? "initial";
  if (snapshot !== "initial" && snapshot !== "never") throw invalid(`snapshot must be "initial" or "never", not ${JSON.stringify(snapshot)}`);
  const numeric = options.numeric ?? "string";
  if (numeric !== "string" && numeric !== "bigint") throw invalid(`numeric must be "string" or "bigint", not ${JSON.stringify(numeric)}`);
  if (options.heartbeatQuery !== undefined && (typeof options.heartbeatQuery !== "string" || options.heartbeatQuery.trim() === "")) throw invalid("heartbeatQuery must be a statement");
  return {
    connection,
    tables,
    slot,
    publication,
    createSlot: options.createSlot ?? true,
    createPublication: options.createPublication ?? true,
    snapshot,
    numeric,
    splitRows: positive("splitRows", options.splitRows, 100_000),
    fetchRows: positive("fetchRows", options.fetchRows, 4_096),
    statusIntervalMs: positive("statusIntervalMs", options.statusIntervalMs, 10_000),
    heartbeatQuery: options.heartbeatQuery,
    heartbeatIntervalMs: positive("heartbeatIntervalMs", options.heartbeatIntervalMs, 10_000),
  };
}
