/**
 * Runs one multi-row statement and, when the server refuses it for the values of a row (a
 * constraint violation, a value of the wrong type: `isBadRow`), finds the bad rows by running each
 * row alone and hands them to `onBadRow` (the sink's error policy); the good rows are written.
 * Inside a transaction each attempt runs under a savepoint, so a refused row does not abort the
 * transaction. Any other error rejects (the caller retries transient ones).
 */
import { isBadRow, type PgClient } from "./pg-client.ts";

export type Row = readonly unknown[];

/** The statement text for `n` rows (cached for the full batch size by the caller's builder). */
export type StatementText = (rows: number) => string;

const SAVEPOINT = "eddy_rows";

/**
 * Writes `rows` with `text(rows.length)`; resolves with the rows written (all but the bad ones).
 * `params` maps a row to its parameters (the whole row, or its key columns for a delete).
 */
export async function writeRows(
  client: PgClient,
  rows: readonly Row[],
  text: StatementText,
  params: (row: Row) => readonly unknown[],
  inTransaction: boolean,
  onBadRow: (row: Row, error: unknown) => void,
): Promise<readonly Row[]> {
  if (rows.length === 0) return rows;
  const values: unknown[] = [];
  for (let i = 0; i < rows.length; i++) values.push(...params(rows[i]!));
  const error = await attempt(client, text(rows.length), values, inTransaction);
  if (error === undefined) return rows;
  if (!isBadRow(error)) throw error;
  // One of them is bad: each alone finds which (rare, so its cost does not matter).
  const written: Row[] = [];
  for (const row of rows) {
    const e = rows.length === 1 ? error : await attempt(client, text(1), params(row), inTransaction);
    if (e === undefined) written.push(row);
    else if (isBadRow(e)) onBadRow(row, e);
    else throw e;
  }
  return written;
}

/** Runs the statement; resolves with the error a bad row caused (undone), or undefined; rejects on any other. */
async function attempt(client: PgClient, text: string, values: readonly unknown[], inTransaction: boolean): Promise<unknown> {
  if (inTransaction) await client.query(`SAVEPOINT ${SAVEPOINT}`);
  try {
    await client.query(text, values);
  } catch (e) {
    if (!isBadRow(e)) throw e;
    if (inTransaction) await client.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`);
    return e;
  }
  if (inTransaction) await client.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
  return undefined;
}
