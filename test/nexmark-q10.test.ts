/**
 * Nexmark q10 (examples/nexmark/q10.ts): every bid to CSV files partitioned by dt and hm, on
 * worker threads at parallelism 2 with checkpoints. The oracle is DuckDB twice over: it reads the
 * committed files (the partition columns from the Hive-style paths) and computes the same rows
 * from the bid table of test/nexmark/oracle.ts, with its own date formatting; the two multisets
 * must be equal. Only committed files are read: a hidden in-progress file left behind would not
 * match the glob, and a missing or doubled part would change the multiset.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { runJob } from "eddy/testing";
import * as q10Job from "../examples/nexmark/q10.ts";
import { nexmarkSettings } from "../examples/nexmark/nexmark-streams.ts";
import { nexmarkOracle } from "./nexmark/oracle.ts";

const EVENTS = 20_000;
/** 100 events per second of event time: 200 s, so bids fall into four or five hm partitions. */
const EVENT_RATE = 100;

/** Every committed row, as `auction|bidder|price|dateTime|extra|dt|hm`, sorted. */
async function committedRows(dir: string): Promise<string[]> {
  const db = await DuckDBInstance.create(":memory:");
  const c = await db.connect();
  try {
    const reader = await c.runAndReadAll(`
      SELECT auction, bidder, price, "dateTime", extra, dt, hm
      FROM read_csv('${dir}/dt=*/hm=*/*.csv', header = false, hive_partitioning = true, hive_types = {'dt': VARCHAR, 'hm': VARCHAR},
        columns = {'auction': 'BIGINT', 'bidder': 'BIGINT', 'price': 'BIGINT', 'dateTime': 'VARCHAR', 'extra': 'VARCHAR'})`);
    return reader
      .getRowsJS()
      .map((r) => r.map(String).join("|"))
      .sort();
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

test("nexmark q10: the committed CSV partitions, read by DuckDB, equal DuckDB's projection of every bid", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-q10-"));
  process.env.NEXMARK_EVENTS = String(EVENTS);
  process.env.NEXMARK_EVENT_RATE = String(EVENT_RATE);
  process.env.Q10_OUT = join(dir, "bid");
  try {
    const run = runJob(q10Job, { mode: "threads", parallelism: 2, checkpointing: { intervalMs: 50 }, checkpointDir: join(dir, "checkpoints") });
    await run.done;
    const actual = await committedRows(join(dir, "bid"));

    const { config } = nexmarkSettings();
    const oracle = await nexmarkOracle(EVENTS, config);
    try {
      const expected = (
        await oracle.query(`
          SELECT auction, bidder, price,
            strftime(epoch_ms("dateTime"), '%Y-%m-%d %H:%M:%S.%g') AS "dateTime", extra,
            strftime(epoch_ms("dateTime"), '%Y-%m-%d') AS dt, strftime(epoch_ms("dateTime"), '%H:%M') AS hm
          FROM bid`)
      )
        .map((r) => [r.auction, r.bidder, r.price, r.dateTime, r.extra, r.dt, r.hm].map(String).join("|"))
        .sort();
      assert.ok(expected.length > 1_000, `${expected.length} bids`);
      assert.equal(actual.length, expected.length, "rows committed");
      assert.deepEqual(actual, expected);
      const partitions = new Set(expected.map((r) => r.split("|").slice(5).join("/")));
      assert.ok(partitions.size >= 3, `bids span ${partitions.size} partitions`);
      // The run ended: every part is committed, none is left in progress or pending.
      for (const dt of readdirSync(join(dir, "bid"))) {
        for (const hm of readdirSync(join(dir, "bid", dt))) {
          for (const f of readdirSync(join(dir, "bid", dt, hm))) assert.match(f, /^part-\d+-\d+\.csv$/, f);
        }
      }
    } finally {
      oracle.close();
    }
  } finally {
    delete process.env.NEXMARK_EVENTS;
    delete process.env.NEXMARK_EVENT_RATE;
    delete process.env.Q10_OUT;
    rmSync(dir, { recursive: true, force: true });
  }
});
