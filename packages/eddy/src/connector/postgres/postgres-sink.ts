/**
 * `PostgresSink` (docs/connectors/postgres.md): `PostgresSink.upsert(options)` writes keyed
 * results idempotently (INSERT ... ON CONFLICT DO UPDATE, DELETE for changelog deletes);
 * `PostgresSink.append(options)` appends rows exactly once with prepared transactions. Options
 * are checked, and `pg` is loaded, when the sink is built.
 */
import type { CommitRetry, Committer, Sink, SinkContext, SinkWriter } from "../sink.ts";
import { PostgresAppendWriter } from "./append-writer.ts";
import { createPool, loadPg, type PgPool } from "./pg-client.ts";
import { keyColumnsOf, sinkConfig, type PostgresSinkOptions, type PostgresUpsertSinkOptions, type SinkConfig } from "./postgres-sink-options.ts";
import { PreparedTransactionCommitter } from "./prepared-transactions.ts";
import { PostgresUpsertWriter } from "./upsert-writer.ts";

function upsert<T>(options: PostgresUpsertSinkOptions<T>): Sink<T> {
  const config = sinkConfig(options);
  const keyColumns = keyColumnsOf(options, config.columns);
  const kind = options.kind;
  loadPg();
  return { createWriter: (context) => new PostgresUpsertWriter(config, keyColumns, kind, context) };
}

class AppendSink<T> implements Sink<T> {
  readonly commitRetry: CommitRetry;
  readonly #config: SinkConfig<T>;

  constructor(config: SinkConfig<T>) {
    this.#config = config;
    this.commitRetry = { attempts: config.maxAttempts, initialBackoffMs: config.initialBackoffMs, maxBackoffMs: config.maxBackoffMs };
  }

  createWriter(context: SinkContext): SinkWriter<T> {
    return new PostgresAppendWriter(this.#config, context);
  }

  createCommitter(): Committer<unknown> {
    // Opened on the first commit: a subtask whose checkpoints held nothing opens no connection.
    let pool: PgPool | undefined;
    return new PreparedTransactionCommitter(() => (pool ??= createPool(this.#config.connection, 1)));
  }
}

function append<T>(options: PostgresSinkOptions<T>): Sink<T> {
  const config = sinkConfig(options);
  loadPg();
  return new AppendSink(config);
}

/**
 * The PostgreSQL sink's factories: `stream.sinkTo(PostgresSink.upsert<Total>({ connection, table:
 * "totals", columns: ["customer", "total"], keyColumns: ["customer"] }))`.
 */
export const PostgresSink = { upsert, append } as const;
