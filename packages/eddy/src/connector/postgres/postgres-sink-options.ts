/**
 * The PostgreSQL sink's options, checked once when the sink is built (docs/connectors/postgres.md).
 */
import { EddyError } from "../../core/errors.ts";
import type { PostgresConnection } from "./pg-client.ts";
import { rowsPerStatement } from "./postgres-sql.ts";

export interface PostgresSinkOptions<T> {
  /** Where to write: a `pg` connection config (host, port, user, password, database, ssl, ...) or a connection string. */
  readonly connection: PostgresConnection;
  /** The table, as `name` or `schema.name` (quoted as given: case is kept). */
  readonly table: string;
  /** The table's columns the sink writes, in order. */
  readonly columns: readonly string[];
  /**
   * A record as the values of `columns`, in that order. Default: the record's fields named like
   * the columns (`columns.map((c) => record[c])`). Values go to `pg` as parameters (numbers,
   * strings, booleans, null, Date, Buffer, bigint as string, objects as JSON).
   */
  readonly row?: (value: T) => readonly unknown[];
  /** Rows per INSERT statement (fewer when the parameters would exceed 65,535). Default 500. */
  readonly rowsPerStatement?: number;
  /** How long a row waits for its statement to fill before a smaller one is sent. Default 1,000 ms. */
  readonly flushIntervalMs?: number;
  /** Connections each sink subtask may open. Default 2. */
  readonly maxConnections?: number;
  /**
   * Attempts in all of a statement (upsert) or of a checkpoint's transaction (append) that failed
   * with a transient error: connection refused, reset or lost, serialization failure, deadlock,
   * the server shutting down. Default 5; then the job fails with the last error.
   */
  readonly maxAttempts?: number;
  /** Backoff before the second attempt, doubling up to maxBackoffMs. Default 100 ms. */
  readonly initialBackoffMs?: number;
  /** Default 5,000 ms. */
  readonly maxBackoffMs?: number;
}

/** A changelog record's operation: write the row (insert or replace it by key) or delete its key. */
export type PostgresRowKind = "upsert" | "delete";

export interface PostgresUpsertSinkOptions<T> extends PostgresSinkOptions<T> {
  /** The primary key (or a unique constraint's) columns: `ON CONFLICT (keyColumns)`; a subset of `columns`. */
  readonly keyColumns: readonly string[];
  /**
   * Whether a record upserts its row or deletes its key (a changelog). Default: every record
   * upserts. A delete needs only the key columns' values of `row(value)` to be right.
   */
  readonly kind?: (value: T) => PostgresRowKind;
}

/** The options of both modes, checked and with their defaults. */
export interface SinkConfig<T> {
  readonly connection: PostgresConnection;
  readonly table: string;
  readonly columns: readonly string[];
  readonly row: (value: T) => readonly unknown[];
  readonly rowsPerStatement: number;
  readonly flushIntervalMs: number;
  readonly maxConnections: number;
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
}

const invalid = (message: string): EddyError => new EddyError("INVALID_SINK_OPTIONS", `PostgresSink: ${message}`);

function integer(name: string, value: number | undefined, fallback: number, min: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < min) throw invalid(`${name} must be an integer ≥ ${min}, not ${JSON.stringify(v)}`);
  return v;
}

function names(what: string, value: unknown): readonly string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((c) => typeof c === "string" && c.length > 0)) {
    throw invalid(`${what} must be a non-empty array of column names, not ${JSON.stringify(value)}`);
  }
  if (new Set(value).size !== value.length) throw invalid(`${what} name a column twice: ${JSON.stringify(value)}`);
  return value.slice();
}

export function sinkConfig<T>(options: PostgresSinkOptions<T>): SinkConfig<T> {
  if (options === null || typeof options !== "object") throw invalid("needs options { connection, table, columns, ... }");
  const { connection, table } = options;
  if (typeof connection !== "string" && (connection === null || typeof connection !== "object")) throw invalid("connection must be a connection string or a pg config object");
  if (typeof table !== "string" || table.length === 0) throw invalid(`table must be a non-empty name, not ${JSON.stringify(table)}`);
  const columns = names("columns", options.columns);
  if (options.row !== undefined && typeof options.row !== "function") throw invalid("row must be a function of the record returning the values of the columns");
  const row = options.row ?? ((value: T) => columns.map((c) => (value as Record<string, unknown>)[c]));
  return {
    connection,
    table,
    columns,
    row,
    rowsPerStatement: rowsPerStatement(integer("rowsPerStatement", options.rowsPerStatement, 500, 1), columns.length),
    flushIntervalMs: integer("flushIntervalMs", options.flushIntervalMs, 1_000, 0),
    maxConnections: integer("maxConnections", options.maxConnections, 2, 1),
    maxAttempts: integer("maxAttempts", options.maxAttempts, 5, 1),
    initialBackoffMs: integer("initialBackoffMs", options.initialBackoffMs, 100, 0),
    maxBackoffMs: integer("maxBackoffMs", options.maxBackoffMs, 5_000, 0),
  };
}

export function keyColumnsOf<T>(options: PostgresUpsertSinkOptions<T>, columns: readonly string[]): readonly string[] {
  const keys = names("keyColumns", options.keyColumns);
  for (const k of keys) if (!columns.includes(k)) throw invalid(`key column ${JSON.stringify(k)} is not one of columns ${JSON.stringify(columns)}`);
  if (options.kind !== undefined && typeof options.kind !== "function") throw invalid('kind must be a function of the record returning "upsert" or "delete"');
  return keys;
}

/** The values of `row(value)`, checked: as many as there are columns. */
export function rowValues<T>(config: SinkConfig<T>, value: T): unknown[] {
  const values = config.row(value);
  if (!Array.isArray(values) || values.length !== config.columns.length) {
    throw new EddyError("POSTGRES_BAD_ROW", `PostgresSink: row() must return ${config.columns.length} values (${config.columns.join(", ")}), got ${JSON.stringify(values)?.slice(0, 200)}`);
  }
  return values;
}

/** A row as an object of its columns: what the error policy shows. */
export function rowObject(columns: readonly string[], values: readonly unknown[]): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (let i = 0; i < columns.length; i++) o[columns[i]!] = values[i];
  return o;
}

/** The wait before attempt `attempt + 1`. */
export function backoffMs(config: SinkConfig<never>, attempt: number): number {
  return Math.min(config.initialBackoffMs * 2 ** (attempt - 1), config.maxBackoffMs);
}
