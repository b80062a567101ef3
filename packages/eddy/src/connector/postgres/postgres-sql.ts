/**
 * The SQL the PostgreSQL sink sends, built once per sink from its table and columns (pure
 * functions, no I/O). Identifiers are always quoted, so any table or column name is safe and
 * case is kept; values are always parameters ($1, $2, ...), never spliced into the text.
 *
 * A statement carries at most MAX_PARAMETERS parameters (PostgreSQL's wire protocol counts them in
 * 16 bits), so a batch is cut into statements of `rowsPerStatement` rows, capped by that.
 */

/** PostgreSQL accepts at most 65,535 parameters in one statement. */
export const MAX_PARAMETERS = 65_535;

/** `name` as a quoted identifier; `schema.table` is split at the first unquoted dot. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** A table name as the user gave it ("orders", "sales.orders") as a quoted, qualified name. */
export function quoteTable(table: string): string {
  const dot = table.indexOf(".");
  return dot < 0 ? quoteIdentifier(table) : `${quoteIdentifier(table.slice(0, dot))}.${quoteIdentifier(table.slice(dot + 1))}`;
}

/** `($1, $2), ($3, $4)` for `rows` rows of `width` parameters. */
function valuesList(rows: number, width: number): string {
  const tuples: string[] = [];
  let p = 1;
  for (let r = 0; r < rows; r++) {
    const params: string[] = [];
    for (let c = 0; c < width; c++) params.push(`$${p++}`);
    tuples.push(`(${params.join(", ")})`);
  }
  return tuples.join(", ");
}

/** A multi-row INSERT of `rows` rows into `columns`. */
export function insertStatement(table: string, columns: readonly string[], rows: number): string {
  return `INSERT INTO ${quoteTable(table)} (${columns.map(quoteIdentifier).join(", ")}) VALUES ${valuesList(rows, columns.length)}`;
}

/**
 * A multi-row upsert (Flink's PostgresDialect.getUpsertStatement): INSERT ... ON CONFLICT (key)
 * DO UPDATE SET every other column to the new row's value; DO NOTHING when every column is a key
 * column. The rows of one statement must have distinct keys (PostgreSQL refuses to update a row
 * twice in one command): the writer keeps the last row of each key.
 */
export function upsertStatement(table: string, columns: readonly string[], keyColumns: readonly string[], rows: number): string {
  const others = columns.filter((c) => !keyColumns.includes(c));
  const action = others.length === 0 ? "DO NOTHING" : `DO UPDATE SET ${others.map((c) => `${quoteIdentifier(c)} = EXCLUDED.${quoteIdentifier(c)}`).join(", ")}`;
  return `${insertStatement(table, columns, rows)} ON CONFLICT (${keyColumns.map(quoteIdentifier).join(", ")}) ${action}`;
}

/** Deletes `rows` rows by key: `DELETE FROM t WHERE (k1, k2) IN (($1, $2), ...)`. */
export function deleteStatement(table: string, keyColumns: readonly string[], rows: number): string {
  return `DELETE FROM ${quoteTable(table)} WHERE (${keyColumns.map(quoteIdentifier).join(", ")}) IN (${valuesList(rows, keyColumns.length)})`;
}

/** Rows per statement: what the user asked for, capped so the parameters fit. */
export function rowsPerStatement(wanted: number, width: number): number {
  return Math.max(1, Math.min(wanted, Math.floor(MAX_PARAMETERS / Math.max(1, width))));
}
