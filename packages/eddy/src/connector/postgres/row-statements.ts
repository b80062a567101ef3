/**
 * Runs one multi-row statement and, when the server refuses it for the values of a row (a
 * constraint violation, a value of the wrong type: `isBadRow`), finds the bad rows by running each
 * row alone and hands them to `onBadRow` (the sink's error policy); the good rows are written.
 *
 * In a transaction a refused statement aborts the whole transaction, and a savepoint around every
 * statement would cost two more round trips each. So there the multi-row statement runs bare, and
 * a refusal rejects with `BadRowAbortedTransaction`: the caller opens a new transaction, sends the
 * rows before again and then this statement's rows `"row-by-row"`, each under a savepoint.
 */
import { isBadRow, type PgClient } from "./pg-client.ts";

export type Row = readonly unknown[];

/** The statement text for `n` rows (cached for the full batch size by the caller's builder). */
export type StatementText = (rows: number) => string;

/**
 * - `autocommit`: outside a transaction; a refused statement is retried row by row at once;
 * - `transaction`: inside one; a refused statement rejects with BadRowAbortedTransaction;
 * - `row-by-row`: inside one, each row under a savepoint (after a BadRowAbortedTransaction).
 */
export type WriteMode = "autocommit" | "transaction" | "row-by-row";

/** A row of a statement run in a transaction was refused, and the transaction is aborted. */
export class BadRowAbortedTransaction extends Error {
  constructor(cause: unknown) {
    super("a row was refused and the transaction is aborted", { cause });
  }
}

const SAVEPOINT = "eddy_row";

/**
 * Writes `rows` with `text(rows.length)`; resolves with the rows written (all but the bad ones).
 * `params` maps a row to its parameters (the whole row, or its key columns for a delete).
 */
export async function writeRows(
  client: PgClient,
  rows: readonly Row[],
  text: StatementText,
  params: (row: Row) => readonly unknown[],
  mode: WriteMode,
  onBadRow: (row: Row, error: unknown) => void,
): Promise<readonly Row[]> {
  if (rows.length === 0) return rows;
  if (mode !== "row-by-row") {
    const values: unknown[] = [];
    for (let i = 0; i < rows.length; i++) values.push(...params(rows[i]!));
    try {
      await client.query(text(rows.length), values);
      return rows;
    } catch (e) {
      if (!isBadRow(e)) throw e;
      if (mode === "transaction") throw new BadRowAbortedTransaction(e);
    }
  }
  // One of them is bad: each alone finds which (rare, so its cost does not matter).
  const written: Row[] = [];
  for (const row of rows) {
    if (mode === "row-by-row") await client.query(`SAVEPOINT ${SAVEPOINT}`);
    try {
      await client.query(text(1), params(row));
    } catch (e) {
      if (!isBadRow(e)) throw e;
      if (mode === "row-by-row") await client.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`);
      onBadRow(row, e);
      continue;
    }
    if (mode === "row-by-row") await client.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
    written.push(row);
  }
  return written;
}
