import { test } from "node:test";
import assert from "node:assert/strict";
import { deleteStatement, insertStatement, MAX_PARAMETERS, quoteTable, rowsPerStatement, upsertStatement } from "./postgres-sql.ts";

test("identifiers are quoted (case and quotes kept); a schema is split at the first dot", () => {
  assert.equal(quoteTable("Orders"), '"Orders"');
  assert.equal(quoteTable('sales.my"table'), '"sales"."my""table"');
});

test("multi-row INSERT, upsert and DELETE by key number their parameters row by row", () => {
  assert.equal(insertStatement("t", ["a", "b"], 2), 'INSERT INTO "t" ("a", "b") VALUES ($1, $2), ($3, $4)');
  assert.equal(upsertStatement("t", ["k", "a", "b"], ["k"], 1), 'INSERT INTO "t" ("k", "a", "b") VALUES ($1, $2, $3) ON CONFLICT ("k") DO UPDATE SET "a" = EXCLUDED."a", "b" = EXCLUDED."b"');
  assert.equal(upsertStatement("t", ["k"], ["k"], 1), 'INSERT INTO "t" ("k") VALUES ($1) ON CONFLICT ("k") DO NOTHING');
  assert.equal(deleteStatement("t", ["k1", "k2"], 2), 'DELETE FROM "t" WHERE ("k1", "k2") IN (($1, $2), ($3, $4))');
});

test("rows per statement are capped so the parameters fit in PostgreSQL's 65,535", () => {
  assert.equal(rowsPerStatement(500, 10), 500);
  assert.equal(rowsPerStatement(100_000, 10), Math.floor(MAX_PARAMETERS / 10));
  assert.equal(rowsPerStatement(1, 100_000), 1);
});
