/**
 * The upsert mode's writer: Flink's JDBC upsert sink on the async sink base (connector/
 * async-sink.ts does the batching, the bounds, the retries of transient errors and the state).
 * Each batch becomes at most two statements on one pooled connection: a DELETE of the keys whose
 * last record in the batch is a delete, and an INSERT ... ON CONFLICT DO UPDATE of the rest.
 *
 * Guarantee: at-least-once writes of idempotent statements, so the table converges to the same
 * rows after a restore (the restored writer sends the rows buffered or in flight at the barrier
 * again, then the replayed records follow in their order): effectively exactly-once for results
 * keyed by `keyColumns`. Per key, statements apply in record order: one batch is in flight per
 * subtask, and within a batch only the last record of a key is sent (it decides the row).
 */
import { EddyError } from "../../core/errors.ts";
import { AsyncSinkWriter } from "../async-sink.ts";
import type { SinkContext, SinkWriter } from "../sink.ts";
import { checkout, createPool, describePgError, isTransient, type PgPool } from "./pg-client.ts";
import { rowObject, rowValues, type PostgresRowKind, type SinkConfig } from "./postgres-sink-options.ts";
import { deleteStatement, upsertStatement } from "./postgres-sql.ts";
import { writeRows, type Row, type StatementText } from "./row-statements.ts";

/** What the async sink buffers and keeps in checkpoints: plain data. */
export interface UpsertEntry {
  readonly op: PostgresRowKind;
  readonly row: Row;
}

/** `text(n)`, remembered for the full batch size (every batch but the last of a flush has it). */
export function cachedText(build: (rows: number) => string, fullRows: number): StatementText {
  const full = build(fullRows);
  return (rows) => (rows === fullRows ? full : build(rows));
}

/** The error the sink's policy is given for a row the server refused. */
export function badRowError(config: SinkConfig<never>, row: Row, error: unknown): EddyError {
  return new EddyError("POSTGRES_BAD_ROW", `PostgresSink: table ${config.table} refused the row ${JSON.stringify(rowObject(config.columns, row))?.slice(0, 500)}: ${describePgError(error)}`, { cause: error });
}

export class PostgresUpsertWriter<T> implements SinkWriter<T> {
  readonly #config: SinkConfig<T>;
  readonly #keyIndexes: readonly number[];
  readonly #pool: PgPool;
  readonly #inner: AsyncSinkWriter<T, UpsertEntry>;
  readonly #upsertText: StatementText;
  readonly #deleteText: StatementText;
  readonly #context: SinkContext;
  #closed: Promise<void> | undefined;
  /** A bad row the `fail` policy failed on: every later call rejects with it (not the async sink's wrapper). */
  #badRow: unknown;

  constructor(config: SinkConfig<T>, keyColumns: readonly string[], kind: ((value: T) => PostgresRowKind) | undefined, context: SinkContext) {
    this.#config = config;
    this.#context = context;
    this.#keyIndexes = keyColumns.map((k) => config.columns.indexOf(k));
    this.#upsertText = cachedText((n) => upsertStatement(config.table, config.columns, keyColumns, n), config.rowsPerStatement);
    this.#deleteText = cachedText((n) => deleteStatement(config.table, keyColumns, n), config.rowsPerStatement);
    this.#pool = createPool(config.connection, config.maxConnections);
    const toEntry = (value: T): UpsertEntry => {
      const op = kind === undefined ? "upsert" : kind(value);
      if (op !== "upsert" && op !== "delete") throw new EddyError("POSTGRES_BAD_ROW", `PostgresSink: kind() must return "upsert" or "delete", not ${JSON.stringify(op)}`);
      return { op, row: rowValues(config, value) };
    };
    this.#inner = new AsyncSinkWriter<T, UpsertEntry>(
      {
        toEntry,
        submit: (batch) => this.#submit(batch),
        isRetryable: isTransient,
        maxBatchSize: config.rowsPerStatement,
        // Per-key order: a later batch may hold a newer row of a key in this one.
        maxInFlightRequests: 1,
        maxBufferedRequests: config.rowsPerStatement * 4,
        maxTimeInBufferMs: config.flushIntervalMs,
        maxAttempts: config.maxAttempts,
        initialBackoffMs: config.initialBackoffMs,
        maxBackoffMs: config.maxBackoffMs,
      },
      context,
    );
  }

  // hot path
  write(value: T, timestamp: number | undefined): void | Promise<void> {
    if (this.#badRow !== undefined) return Promise.reject(this.#badRow);
    const r = this.#inner.write(value, timestamp);
    return r === undefined ? r : r.catch((e: unknown) => Promise.reject(this.#badRow ?? e));
  }

  flush(endOfInput: boolean): void | Promise<void> {
    if (this.#badRow !== undefined) return Promise.reject(this.#badRow);
    const r = this.#inner.flush(endOfInput);
    return r === undefined ? r : r.catch((e: unknown) => Promise.reject(this.#badRow ?? e));
  }

  snapshotState(): readonly UpsertEntry[] {
    if (this.#badRow !== undefined) throw this.#badRow;
    return this.#inner.snapshotState();
  }

  /** May be called twice: the pool is ended once. */
  close(): Promise<void> {
    this.#inner.close();
    return (this.#closed ??= this.#pool.end());
  }

  async #submit(batch: readonly UpsertEntry[]): Promise<void> {
    // The last record of each key decides its row; the two statements then touch disjoint keys.
    const last = new Map<string, UpsertEntry>();
    for (const entry of batch) last.set(this.#keyOf(entry.row), entry);
    const upserts: Row[] = [];
    const deletes: Row[] = [];
    for (const entry of last.values()) (entry.op === "delete" ? deletes : upserts).push(entry.row);
    const onBadRow = (row: Row, error: unknown): void => {
      try {
        this.#context.reportBadRecord(rowObject(this.#config.columns, row), badRowError(this.#config, row, error));
      } catch (e) {
        this.#badRow ??= e;
        throw e;
      }
    };
    const client = await checkout(this.#pool);
    let failure: unknown;
    try {
      const keys = this.#keyIndexes;
      await writeRows(client, deletes, this.#deleteText, (row) => keys.map((i) => row[i]), "autocommit", onBadRow);
      await writeRows(client, upserts, this.#upsertText, (row) => row, "autocommit", onBadRow);
    } catch (e) {
      failure = e;
      throw e;
    } finally {
      // A connection that failed mid-statement is not given to the next batch.
      client.release(failure !== undefined && isTransient(failure));
    }
  }

  #keyOf(row: Row): string {
    let key = "";
    for (const i of this.#keyIndexes) {
      const v = row[i];
      key += `${typeof v}:${v instanceof Date ? v.toISOString() : String(v)}\u0001`;
    }
    return key;
  }
}
