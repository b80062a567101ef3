/**
 * The append mode's writer, exactly-once with prepared transactions (prepared-transactions.ts):
 * the rows of one checkpoint go into one transaction, sent in multi-row INSERTs as batches fill
 * (or every flushIntervalMs); at the barrier `prepareCommit` sends the rest and runs `PREPARE
 * TRANSACTION '<gid>'`, which makes them durable but invisible and frees the connection; the
 * committer runs `COMMIT PREPARED` once the checkpoint completes.
 *
 * The rows of the open transaction stay in memory until its barrier: when the connection is lost
 * (or a serialization failure aborts it) the transaction is gone on the server, and the retry
 * opens a new one and sends them all again. So memory grows with the rows of one checkpoint
 * interval; the connection is held in a transaction for at most that interval (without
 * checkpointing, until the end of input).
 *
 * All database work runs one step at a time on a promise chain (the steps of a transaction must
 * not interleave, and the next checkpoint's rows must not enter the previous transaction); a step
 * that fails ends the writer, and every later call rejects with its error.
 */
import { randomUUID } from "node:crypto";
import { EddyError } from "../../core/errors.ts";
import type { SinkContext, SinkWriter } from "../sink.ts";
import { checkout, createPool, type PgClient, type PgPool } from "./pg-client.ts";
import { rowObject, rowValues, type SinkConfig } from "./postgres-sink-options.ts";
import { insertStatement } from "./postgres-sql.ts";
import {
  finishPrepared,
  gidOf,
  gidPrefix,
  preparedTransactions,
  readWriterState,
  transactionsToRollBack,
  type AppendWriterState,
  type PreparedTransaction,
} from "./prepared-transactions.ts";
import { withRetries } from "./retries.ts";
import { BadRowAbortedTransaction, writeRows, type Row, type StatementText } from "./row-statements.ts";
import { badRowError, cachedText } from "./upsert-writer.ts";

/** The rows of one checkpoint and the server transaction they are being written in. */
interface Txn {
  readonly seq: number;
  readonly rows: Row[];
  /** Rows handed to a send step (rows[0, scheduled)); the rest wait for a full batch or the timer. */
  scheduled: number;
  /** Rows written in the open server transaction (0 when there is none). */
  sent: number;
  /** The connection holding the open transaction, if one is open. */
  client: PgClient | undefined;
  /** Rows the server refused (handed to the error policy): never sent again. */
  readonly bad: Set<Row>;
  /** rows[checkFrom, checkUpTo) go row by row, each under a savepoint: a statement of them had a bad row. */
  checkFrom: number;
  checkUpTo: number;
}

/** Send steps queued before `write` makes the task wait. */
const MAX_QUEUED_SENDS = 2;

export class PostgresAppendWriter<T> implements SinkWriter<T> {
  readonly #config: SinkConfig<T>;
  readonly #context: SinkContext;
  readonly #pool: PgPool;
  readonly #prefix: string;
  readonly #epoch = randomUUID().slice(0, 8);
  readonly #insertText: StatementText;
  #current: Txn;
  /** The seq of the transaction closed at the last barrier (what the writer state records). */
  #lastSeq: number;
  /** Settles when every step queued so far has run; never rejects (a failure goes to #failure). */
  #chain: Promise<void>;
  #queuedSends = 0;
  #failure: unknown;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed: Promise<void> | undefined;

  constructor(config: SinkConfig<T>, context: SinkContext) {
    this.#config = config;
    this.#context = context;
    this.#prefix = gidPrefix(context.job.jobName, context.operatorName, config.table);
    this.#insertText = cachedText((n) => insertStatement(config.table, config.columns, n), config.rowsPerStatement);
    this.#pool = createPool(config.connection, config.maxConnections);
    const restored = context.restoredState?.map(readWriterState);
    this.#lastSeq = restored === undefined || restored.length === 0 ? -1 : Math.max(...restored.map((s) => s.seq));
    this.#current = newTxn(this.#lastSeq + 1);
    this.#chain = Promise.resolve();
    this.#enqueue(() => this.#recover(restored));
  }

  // hot path
  write(value: T): void | Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const txn = this.#current;
    txn.rows.push(rowValues(this.#config, value));
    if (txn.rows.length - txn.scheduled >= this.#config.rowsPerStatement) this.#schedule(txn);
    else if (this.#timer === undefined && this.#config.flushIntervalMs > 0) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        if (this.#current === txn && txn.rows.length > txn.scheduled) this.#schedule(txn);
      }, this.#config.flushIntervalMs);
    }
    if (this.#queuedSends > MAX_QUEUED_SENDS) return this.#settled();
  }

  /** Sends every row written so far into the open transaction (visible only once committed). */
  flush(): Promise<void> {
    const txn = this.#current;
    if (txn.rows.length > txn.scheduled) this.#schedule(txn);
    return this.#settled();
  }

  /** Closes this checkpoint's transaction: sent, prepared; its gid is the committable. */
  prepareCommit(): Promise<readonly PreparedTransaction[]> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const txn = this.#current;
    this.#current = newTxn(txn.seq + 1);
    this.#lastSeq = txn.seq;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (txn.rows.length === 0) return Promise.resolve([]);
    txn.scheduled = txn.rows.length;
    return this.#enqueue(() => this.#prepare(txn));
  }

  snapshotState(): readonly AppendWriterState[] {
    if (this.#failure !== undefined) throw this.#failure;
    return [{ v: 1, subtask: this.#context.subtaskIndex, seq: this.#lastSeq }];
  }

  /** Ends the open transaction (the server rolls back what was not prepared) and the pool. May be called twice. */
  close(): Promise<void> {
    if (this.#closed !== undefined) return this.#closed;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#failure ??= new EddyError("SINK_CLOSED", `sink '${this.#context.operatorName}' (subtask ${this.#context.subtaskIndex}) is closed`);
    const txn = this.#current;
    this.#closed = this.#chain.then(() => {
      dropConnection(txn);
      return this.#pool.end();
    });
    return this.#closed;
  }

  /** Runs `step` after every step queued before it; its failure ends the writer. */
  #enqueue<R>(step: () => Promise<R>): Promise<R> {
    const run = this.#chain.then(() => {
      if (this.#failure !== undefined) throw this.#failure;
      return step();
    });
    this.#chain = run.then(
      () => {},
      (e: unknown) => {
        this.#failure ??= e;
      },
    );
    return run;
  }

  /** Resolves once every queued step ran; rejects if the writer failed. */
  #settled(): Promise<void> {
    return this.#chain.then(() => {
      if (this.#failure !== undefined) throw this.#failure;
    });
  }

  #schedule(txn: Txn): void {
    txn.scheduled = txn.rows.length;
    const upTo = txn.scheduled;
    this.#queuedSends++;
    this.#enqueue(() => this.#send(txn, upTo)).then(
      () => this.#queuedSends--,
      () => this.#queuedSends--,
    );
  }

  /** Writes rows[sent, upTo) into the transaction, opening it (and sending rows[0, sent) again) when there is none. */
  #send(txn: Txn, upTo: number): Promise<void> {
    return withRetries(this.#config, this.#context, `write ${upTo - txn.sent} rows in the transaction of barrier ${txn.seq}`, async () => {
      try {
        for (;;) {
          try {
            await this.#sendInTransaction(txn, upTo);
            return;
          } catch (e) {
            if (!(e instanceof BadRowAbortedTransaction)) throw e;
            // The statement of rows[sent, end) had a bad row: again, in a new transaction, those row by row.
            txn.checkFrom = txn.sent;
            txn.checkUpTo = Math.min(txn.sent + this.#config.rowsPerStatement, upTo);
            dropConnection(txn);
          }
        }
      } catch (e) {
        dropConnection(txn, e);
        throw e;
      }
    });
  }

  async #sendInTransaction(txn: Txn, upTo: number): Promise<void> {
    if (txn.client === undefined) {
      const client = await checkout(this.#pool);
      txn.client = client;
      txn.sent = 0;
      await client.query("BEGIN");
    }
    while (txn.sent < upTo) {
      const end = Math.min(txn.sent + this.#config.rowsPerStatement, upTo);
      const chunk = txn.rows.slice(txn.sent, end).filter((r) => !txn.bad.has(r));
      await writeRows(txn.client, chunk, this.#insertText, (r) => r, txn.sent < txn.checkUpTo && end > txn.checkFrom ? "row-by-row" : "transaction", (row, e) => {
        txn.bad.add(row);
        this.#context.reportBadRecord(rowObject(this.#config.columns, row), badRowError(this.#config, row, e));
      });
      txn.sent = end;
    }
  }

  async #prepare(txn: Txn): Promise<readonly PreparedTransaction[]> {
    const gid = gidOf(this.#prefix, this.#context.subtaskIndex, txn.seq, this.#epoch);
    await withRetries(this.#config, this.#context, `prepare the transaction ${gid}`, async (attempt) => {
      // The connection broke during an earlier PREPARE: it may have been prepared before it did.
      if (attempt > 1 && txn.client === undefined && (await preparedTransactions(this.#pool, gid)).includes(gid)) return;
      await this.#send(txn, txn.rows.length);
      const client = txn.client!;
      try {
        await client.query(`PREPARE TRANSACTION '${gid}'`);
      } catch (e) {
        dropConnection(txn, e);
        if ((e as { code?: unknown }).code === "55000") throw preparedTransactionsDisabled(e);
        throw e;
      }
      txn.client = undefined;
      client.release();
    });
    return [{ v: 1, gid }];
  }

  /** Checks the server allows prepared transactions; rolls back the sink's ones no checkpoint holds. */
  #recover(restored: readonly AppendWriterState[] | undefined): Promise<void> {
    return withRetries(this.#config, this.#context, "recover its prepared transactions", async () => {
      const setting = await this.#pool.query("SELECT current_setting('max_prepared_transactions')::int AS n");
      if (Number(setting.rows[0]?.n) === 0) throw preparedTransactionsDisabled(undefined);
      const gids = await preparedTransactions(this.#pool, this.#prefix);
      await finishPrepared(this.#pool, transactionsToRollBack(this.#prefix, gids, this.#context.subtaskIndex, restored), "ROLLBACK");
    });
  }
}

function newTxn(seq: number): Txn {
  return { seq, rows: [], scheduled: 0, sent: 0, client: undefined, bad: new Set(), checkFrom: 0, checkUpTo: 0 };
}

/** Gives up the transaction's connection (closed, so the server rolls back whatever it held). */
function dropConnection(txn: Txn, error?: unknown): void {
  const client = txn.client;
  txn.client = undefined;
  txn.sent = 0;
  client?.release(error instanceof Error ? error : true);
}

function preparedTransactionsDisabled(cause: unknown): EddyError {
  return new EddyError(
    "POSTGRES_PREPARED_TRANSACTIONS_DISABLED",
    "PostgresSink.append needs prepared transactions, and the server has max_prepared_transactions = 0: set it (e.g. to 64) in postgresql.conf and restart the server (docs/connectors/postgres.md)",
    { cause },
  );
}
