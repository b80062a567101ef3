/**
 * PostgresSink against a real PostgreSQL (test/postgres-server.ts starts one for this file):
 * - upsert mode, kill-and-compare: a keyed running count and sum with changelog deletes, worker
 *   exits and exceptions at random records on worker threads at parallelism 2; the table equals
 *   the aggregate SQL computes over the input;
 * - append mode, exactly-once: the same kills, and a `kill -9` of `eddy run` resumed with
 *   `--from-checkpoint`: every input row is in the table exactly once, and no prepared
 *   transaction of the sink is left;
 * - rows the server refuses go to the sink's error policy with the row;
 * - the server going away mid-run is retried, then the job fails clearly.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { defineJob, EddyError, type DeadLetter } from "eddy";
import { PostgresSink } from "eddy/postgres";
import { collectSink, runJob } from "eddy/testing";
import { latestCheckpoint } from "./jobs/checkpointed.ts";
import { KEYS, postgresSinkJob } from "./jobs/postgres-sink.ts";
import { EDDY_BIN, killWhenReady, prng, withEnv } from "./fixtures.ts";
import { startPostgres, type PostgresServer } from "./postgres-server.ts";
import { orders, postgresUpsertJob, TABLE_DDL } from "../examples/postgres-upsert.ts";

const jobFile = resolve(import.meta.dirname, "jobs/postgres-sink.ts");
const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
/** Not a multiple of KEYS: some keys have an odd count (kept), others an even one (deleted when divisible by 10). */
const EVENTS = 20_025;

let server: PostgresServer;
before(async () => {
  server = await startPostgres();
});
after(async () => {
  await server?.stop();
});

async function createTable(mode: "upsert" | "append", table: string): Promise<void> {
  await server.query(
    mode === "upsert"
      ? `CREATE TABLE ${table} (key int PRIMARY KEY, "count" bigint NOT NULL, "sum" bigint NOT NULL)`
      : // No key: a row written twice would show.
        `CREATE TABLE ${table} (id bigint NOT NULL, k int NOT NULL, v bigint NOT NULL)`,
  );
}

/** What SQL computes from the input 1..events, in the table's shape (as a query over generate_series). */
function oracleQuery(mode: "upsert" | "append", events: number): string {
  return mode === "upsert"
    ? `SELECT n % ${KEYS} AS key, count(*) AS "count", sum(n) AS "sum" FROM generate_series(1, ${events}) n GROUP BY n % ${KEYS} HAVING NOT (n % ${KEYS} % 10 = 0 AND count(*) % 2 = 0)`
    : `SELECT n AS id, n % ${KEYS} AS k, n * 2 AS v FROM generate_series(1, ${events}) n`;
}

/** The table's rows against the oracle's, as multisets (EXCEPT ALL: a row written twice is one too many). */
async function compareWithOracle(mode: "upsert" | "append", table: string, events: number): Promise<{ rows: number; expected: number; extra: unknown[]; missing: unknown[] }> {
  const columns = mode === "upsert" ? `key, "count", "sum"` : "id, k, v";
  const oracle = oracleQuery(mode, events);
  const [counts] = await server.query<{ rows: string; expected: string }>(`SELECT (SELECT count(*) FROM ${table}) AS rows, (SELECT count(*) FROM (${oracle}) o) AS expected`);
  const extra = await server.query(`SELECT ${columns} FROM ${table} EXCEPT ALL SELECT * FROM (${oracle}) o LIMIT 5`);
  const missing = await server.query(`SELECT * FROM (${oracle}) o EXCEPT ALL SELECT ${columns} FROM ${table} LIMIT 5`);
  return { rows: Number(counts!.rows), expected: Number(counts!.expected), extra, missing };
}

async function assertTableEqualsOracle(mode: "upsert" | "append", table: string, events: number, label: string): Promise<void> {
  const { rows, expected, extra, missing } = await compareWithOracle(mode, table, events);
  assert.deepEqual({ rows, extra, missing }, { rows: expected, extra: [], missing: [] }, `${label}: the table equals SQL's result over the input`);
}

async function preparedLeft(): Promise<string[]> {
  return (await server.query<{ gid: string }>("SELECT gid FROM pg_prepared_xacts")).map((r) => r.gid);
}

for (const mode of ["upsert", "append"] as const) {
  test(`${mode}: worker threads, parallelism 2, a worker exit or an exception at a random record; the table equals SQL's result over the input`, async () => {
    const dir = mkdtempSync(join(tmpdir(), `eddy-pg-${mode}-`));
    try {
      const seed = Number(process.env.EDDY_PG_SEED ?? Date.now() % 100_000);
      const random = prng(seed);
      const kinds = ["exit", "process", "exit"] as const;
      for (let round = 0; round < kinds.length; round++) {
        const table = `${mode}_round_${round}`;
        await createTable(mode, table);
        const atRecord = 1 + Math.floor(random() * EVENTS * 0.95);
        const fault = { kind: kinds[round]!, atRecord, marker: join(dir, `fault-${round}`) };
        const label = `seed ${seed}, round ${round}, ${fault.kind} at ${atRecord}`;
        const handle = await withEnv({ EDDY_PG_URL: server.url, EDDY_PG_MODE: mode, EDDY_PG_TABLE: table, EDDY_PG_EVENTS: String(EVENTS), EDDY_PG_FAULT: JSON.stringify(fault), EDDY_PG_RELEASE: "" }, async () => {
          const h = runJob(postgresSinkJob, {
            mode: "threads",
            parallelism: 2,
            checkpointing: { intervalMs: 20 },
            checkpointDir: join(dir, "checkpoints"),
            jobId: `${mode}-${round}`,
            restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 },
            logger: silent,
          });
          await h.done;
          return h;
        });
        assert.ok(handle.checkpoints().length > 0, `${label}: checkpoints completed`);
        await assertTableEqualsOracle(mode, table, EVENTS, label);
        assert.deepEqual(await preparedLeft(), [], `${label}: no prepared transaction left`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(`${mode}: eddy run killed with SIGKILL, resumed with --from-checkpoint; the table equals SQL's result over the input`, async () => {
    const dir = mkdtempSync(join(tmpdir(), `eddy-pg-kill-${mode}-`));
    try {
      const events = 1_000_025;
      const table = `${mode}_kill`;
      await createTable(mode, table);
      const checkpoints = join(dir, "checkpoints");
      const release = join(dir, "release");
      const env = { ...process.env, EDDY_PG_URL: server.url, EDDY_PG_MODE: mode, EDDY_PG_TABLE: table, EDDY_PG_EVENTS: String(events), EDDY_PG_FAULT: "", EDDY_PG_RELEASE: release };
      const args = ["run", jobFile, "-p", "2", "-D", "execution.checkpointing.interval=50ms", "--checkpoint-dir", checkpoints, "--job-id", `kill-${mode}`, "--no-progress"];
      // Killed once some rows are in the table and (append mode) while a checkpoint's
      // transactions are prepared, not yet committed: the resumed job must commit the ones its
      // checkpoint holds and roll back the newer ones.
      let rows = 0;
      let prepared = 0;
      const { killed, stderr } = await killWhenReady(args, env, () => {
        const latest = latestCheckpoint(join(checkpoints, `kill-${mode}`));
        // Polled synchronously: the counts are refreshed in the background.
        void server
          .query<{ n: string; p: string }>(`SELECT (SELECT count(*) FROM ${table}) AS n, (SELECT count(*) FROM pg_prepared_xacts) AS p`)
          .then((r) => ((rows = Number(r[0]!.n)), (prepared = Number(r[0]!.p))), () => {});
        return latest !== undefined && Number(/chk-(\d+)$/.exec(latest)![1]) >= 3 && rows > 0 && (mode === "upsert" || prepared > 0);
      });
      assert.ok(killed, `the job finished before it could be killed; stderr:\n${stderr}`);
      if (mode === "append") assert.ok(rows < events, `partial output before the kill: ${rows}`);
      const from = latestCheckpoint(join(checkpoints, `kill-${mode}`))!;
      writeFileSync(release, "");
      const resumed = spawnSync(process.execPath, [EDDY_BIN, ...args, "--from-checkpoint", from], { encoding: "utf8", env });
      assert.equal(resumed.status, 0, resumed.stderr);
      await assertTableEqualsOracle(mode, table, events, "over both runs");
      assert.deepEqual(await preparedLeft(), [], "no prepared transaction left");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

interface Item {
  readonly id: number;
  readonly name: string | null;
  readonly qty: unknown;
}

const items: Item[] = [
  { id: 1, name: "a", qty: 1 },
  { id: 2, name: null, qty: 2 }, // NOT NULL
  { id: 3, name: "c", qty: "many" }, // not an integer
  { id: 4, name: "d", qty: -1 }, // CHECK (qty >= 0)
  { id: 5, name: "e", qty: 5 },
];

function itemsJob(mode: "upsert" | "append", table: string, policy: "fail" | "dead-letter") {
  return defineJob(`postgres-bad-rows-${mode}`, (env) => {
    // Two rows per statement: a later statement with a bad row sends the earlier ones again in a new transaction (append).
    const options = { connection: server.url, table, columns: ["id", "name", "qty"], flushIntervalMs: 0, rowsPerStatement: 2 };
    const sink = env
      .fromCollection(items)
      .sinkTo(mode === "upsert" ? PostgresSink.upsert<Item>({ ...options, keyColumns: ["id"] }) : PostgresSink.append<Item>(options), "items")
      .onError(policy);
    if (policy === "dead-letter") sink.deadLetters().sinkTo(collectSink("dead"));
  });
}

for (const mode of ["upsert", "append"] as const) {
  test(`${mode}: rows the server refuses (NOT NULL, a wrong type, a CHECK) go to the sink's dead letters with the row; the others are written`, async () => {
    const table = `${mode}_items`;
    await server.query(`CREATE TABLE ${table} (id int ${mode === "upsert" ? "PRIMARY KEY" : "NOT NULL"}, name text NOT NULL, qty int CHECK (qty >= 0))`);
    const run = runJob(itemsJob(mode, table, "dead-letter"), { mode: "inline", checkpointing: { intervalMs: 20 }, logger: silent });
    await run.done;
    assert.deepEqual(await server.query(`SELECT id, name, qty FROM ${table} ORDER BY id`), [
      { id: 1, name: "a", qty: 1 },
      { id: 5, name: "e", qty: 5 },
    ]);
    const dead = run.collected<DeadLetter>("dead").sort((a, b) => (a.value as Item).id - (b.value as Item).id);
    assert.deepEqual(
      dead.map((d) => ({ operator: d.operator, code: d.error.code, value: d.value })),
      items.filter((i) => i.id >= 2 && i.id <= 4).map((value) => ({ operator: "items", code: "POSTGRES_BAD_ROW", value })),
    );
    assert.match(dead[0]!.error.message, /table \w+_items refused the row \{"id":2,"name":null,"qty":2\}: null value in column "name".*SQLSTATE 23502/);
    assert.match(dead[1]!.error.message, /invalid input syntax for type integer: "many"; SQLSTATE 22P02/);
    assert.match(dead[2]!.error.message, /violates check constraint.*SQLSTATE 23514/);
    const counters = Object.assign({}, ...run.metrics().map((m) => m.counters)) as Record<string, number>;
    assert.equal(counters["items.numRecordsDeadLettered"], 3);
    assert.deepEqual(await preparedLeft(), []);
  });
}

test("append, the default policy: a refused row fails the job with POSTGRES_BAD_ROW naming the row, and nothing of the checkpoint is committed", async () => {
  const table = "append_items_fail";
  await server.query(`CREATE TABLE ${table} (id int NOT NULL, name text NOT NULL, qty int CHECK (qty >= 0))`);
  const run = runJob(itemsJob("append", table, "fail"), { mode: "inline", checkpointing: { intervalMs: 10_000 }, logger: silent });
  await assert.rejects(run.done, (e: unknown) => {
    assert.ok(e instanceof EddyError, String(e));
    assert.equal(e.code, "POSTGRES_BAD_ROW");
    assert.equal(e.operator, "items");
    assert.match(e.message, /refused the row \{"id":2,"name":null,"qty":2\}/);
    return true;
  });
  assert.deepEqual(await server.query(`SELECT id FROM ${table}`), []);
  assert.deepEqual(await preparedLeft(), []);
});

for (const mode of ["upsert", "append"] as const) {
  test(`${mode}: the server going away mid-run is retried (5 attempts with backoff), then the job fails naming the connection error`, async () => {
    const own = await startPostgres();
    const dir = mkdtempSync(join(tmpdir(), `eddy-pg-away-${mode}-`));
    try {
      const table = `${mode}_away`;
      await own.query(
        mode === "upsert" ? `CREATE TABLE ${table} (key int PRIMARY KEY, "count" bigint NOT NULL, "sum" bigint NOT NULL)` : `CREATE TABLE ${table} (id bigint NOT NULL, k int NOT NULL, v bigint NOT NULL)`,
      );
      const started = Date.now();
      const run = await withEnv({ EDDY_PG_URL: own.url, EDDY_PG_MODE: mode, EDDY_PG_TABLE: table, EDDY_PG_EVENTS: "100000000", EDDY_PG_FAULT: "", EDDY_PG_RELEASE: join(dir, "never") }, async () =>
        runJob(postgresSinkJob, { mode: "inline", checkpointing: { intervalMs: 50 }, logger: silent }),
      );
      const failed = assert.rejects(run.done, (e: unknown) => {
        assert.ok(e instanceof EddyError, String(e));
        // The writer or the committer, whichever reaches the server first.
        assert.match(e.code, /^(SINK_WRITE_FAILED|POSTGRES_SINK_FAILED|SINK_COMMIT_FAILED)$/, e.message);
        assert.match(e.message, /after 5 attempts/, e.message);
        assert.match(e.message, /ECONNREFUSED|terminat|shut/i, e.message);
        return true;
      });
      // Some rows reached the table (committed, in append mode), then the server stops.
      for (;;) {
        const [row] = await own.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
        if (Number(row!.n) > 0) break;
        assert.ok(Date.now() - started < 60_000, "no row reached the table within a minute");
        await new Promise((r) => setTimeout(r, 20));
      }
      await own.stop();
      await failed;
    } finally {
      await own.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test("append, restore: the restored writer rolls back what was prepared after its checkpoint's barrier, the committer commits what the checkpoint holds (again: harmless), and a fresh start rolls back an abandoned run's", async () => {
  const table = "append_restore";
  await server.query(`CREATE TABLE ${table} (id bigint NOT NULL)`);
  const sink = PostgresSink.append<{ id: number }>({ connection: server.url, table, columns: ["id"], flushIntervalMs: 0 });
  const context = (restoredState?: readonly unknown[]) => ({
    subtaskIndex: 0,
    parallelism: 1,
    operatorName: "ids",
    job: { jobName: "restore-test", collect() {}, commitOnce() {}, writeStdout() {} },
    restoredState,
    reportBadRecord: (_value: unknown, cause: unknown) => {
      throw cause;
    },
  });
  const ids = async (): Promise<number[]> => (await server.query<{ id: string }>(`SELECT id FROM ${table} ORDER BY id`)).map((r) => Number(r.id));
  const prepared = async (): Promise<string[]> => (await preparedLeft()).filter((g) => g.startsWith("eddy:restore-test:"));

  // The first attempt: barrier 0 holds rows 1-3, barrier 1 rows 4-5; it crashes before barrier 1 completes.
  const first = sink.createWriter(context());
  for (const id of [1, 2, 3]) await first.write({ id }, undefined);
  const held = await first.prepareCommit!();
  const checkpoint = await first.snapshotState!(1);
  for (const id of [4, 5]) await first.write({ id }, undefined);
  const newer = await first.prepareCommit!();
  for (const id of [6]) await first.write({ id }, undefined);
  await first.flush!(false);
  await first.close!();
  await first.close!(); // twice: harmless
  assert.equal(held.length, 1);
  assert.equal(newer.length, 1);
  assert.equal((await prepared()).length, 2, "both barriers' transactions are prepared; row 6's, not prepared, is gone with the connection");
  assert.deepEqual(await ids(), []);

  // Restored from the checkpoint of barrier 0: barrier 1's transaction is rolled back, barrier 0's committed.
  const restored = sink.createWriter(context(checkpoint));
  await restored.flush!(false);
  assert.deepEqual(await prepared(), [(held[0] as { gid: string }).gid]);
  const committer = sink.createCommitter!(context());
  await committer.commit(held);
  await committer.commit(held);
  assert.deepEqual(await ids(), [1, 2, 3]);
  assert.deepEqual(await prepared(), []);

  // The restored writer goes on; then the job is abandoned with a transaction prepared, and started afresh.
  await restored.write({ id: 7 }, undefined);
  await restored.prepareCommit!();
  await restored.close!();
  assert.equal((await prepared()).length, 1);
  const fresh = sink.createWriter(context());
  await fresh.flush!(false);
  await fresh.close!();
  assert.deepEqual(await prepared(), [], "a fresh start rolls back its subtask's transactions left by an earlier run");
  assert.deepEqual(await ids(), [1, 2, 3]);
});

test("examples/postgres-upsert.ts leaves each customer's order count and amount, and no row for the customer whose orders were all refunded", async () => {
  await server.query(TABLE_DDL);
  await runJob(postgresUpsertJob(server.url), { parallelism: 2, checkpointing: { intervalMs: 20 }, logger: silent }).done;
  const expected = new Map<string, { customer: string; orders: number; amount: number }>();
  for (const o of orders()) {
    const t = expected.get(o.customer) ?? { customer: o.customer, orders: 0, amount: 0 };
    expected.set(o.customer, { customer: o.customer, orders: t.orders + 1, amount: t.amount + o.amount });
  }
  const want = [...expected.values()].filter((t) => t.amount !== 0).sort((a, b) => a.customer.localeCompare(b.customer));
  assert.equal(want.length, 19);
  assert.deepEqual(await server.query("SELECT customer, orders, amount FROM customer_totals ORDER BY customer COLLATE \"C\""), want);
});
