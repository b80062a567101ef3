/**
 * Two-phase (local-global) window aggregation end to end: the job of test/jobs/local-aggregation.ts
 * at parallelism 2 on worker threads gives exactly the windows of the same job without it and of a
 * batch recomputation; savepoints taken with it off restore with it on and back (the keyed side's
 * state is the same, and what the local side held at the barrier was sent before it); and it stays
 * out of windows whose output it could change.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { defineJob, EventTimeSessionWindows, OutputTag, TumblingEventTimeWindows, TumblingProcessingTimeWindows, CountTrigger, WatermarkStrategy } from "eddy";
import { collectSink, runJob, type RunOptions } from "eddy/testing";
import { openSavepoint } from "eddy/savepoint";
import laJob, { eventTime, KEYS, RECORDS, SESSION_GAP, SHAPES, type Row, type Shape } from "./jobs/local-aggregation.ts";

/** The windows of `shape` computed from the whole input. */
function oracle(shape: Shape): string[] {
  const rows = new Map<string, Row>();
  const add = (key: number, start: number, end: number, n: number): void => {
    const id = `${key}|${start}`;
    const r = rows.get(id) ?? { key, start, end, count: 0, sum: 0 };
    rows.set(id, { ...r, count: r.count + 1, sum: r.sum + n });
  };
  if (shape === "session-aggregate") {
    // Per key in time order: a record within the gap of the session's last one extends it.
    const open = new Map<number, Row>();
    for (let n = 1; n <= RECORDS; n++) {
      const key = n % KEYS;
      const ts = eventTime(shape, n);
      const s = open.get(key);
      if (s !== undefined && ts <= s.end) open.set(key, { ...s, end: ts + SESSION_GAP, count: s.count + 1, sum: s.sum + n });
      else {
        if (s !== undefined) rows.set(`${key}|${s.start}`, s);
        open.set(key, { key, start: ts, end: ts + SESSION_GAP, count: 1, sum: n });
      }
    }
    for (const s of open.values()) rows.set(`${s.key}|${s.start}`, s);
  }
  for (let n = 1; n <= RECORDS && shape !== "session-aggregate"; n++) {
    const key = shape === "all-aggregate" ? -1 : n % KEYS;
    if (shape === "sliding-aggregate") {
      for (let s = Math.floor(n / 250) * 250; s > n - 1000; s -= 250) add(key, s, s + 1000, n);
    } else {
      const s = Math.floor(n / 1000) * 1000;
      add(key, s, s + 1000, n);
    }
  }
  return [...rows.values()].map((r) => JSON.stringify(r)).sort();
}

const sorted = (rows: readonly Row[]): string[] => rows.map((r) => JSON.stringify({ key: r.key, start: r.start, end: r.end, count: r.count, sum: r.sum })).sort();

async function withEnv<T>(env: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  Object.assign(process.env, env);
  try {
    return await fn();
  } finally {
    for (const k of Object.keys(env)) delete process.env[k];
  }
}

for (const shape of SHAPES) {
  test(`local aggregation (${shape}), parallelism 2 on threads: the same windows as without it and as the batch oracle, far fewer records shuffled`, { timeout: 120_000 }, async () => {
    const expected = oracle(shape);
    const results: Record<string, string[]> = {};
    // "config-off": on in the job, off for the run (`-D pipeline.local-aggregation=false`).
    for (const local of ["on", "off", "config-off"]) {
      await withEnv({ EDDY_LA_SHAPE: shape, EDDY_LA_LOCAL: local === "off" ? "off" : "on" }, async () => {
        const config: Record<string, string> = local === "config-off" ? { "pipeline.local-aggregation": "false" } : {};
        const handle = runJob(laJob, { mode: "threads", parallelism: 2, config });
        const result = await handle.done;
        results[local] = sorted(handle.collected<Row>("rows"));
        const localNodes = handle.plan.nodes.filter((n) => n.name.startsWith("LocalAggregation"));
        if (local === "off") {
          assert.equal(localNodes.length, 0, "off: no local aggregation");
          return;
        }
        assert.equal(localNodes.length, 1, "on: one local aggregation");
        const node = localNodes[0]!;
        assert.equal(node.operatorId, "windows-local", "its operator id is the window's plus -local");
        const input = node.inputs[0]!;
        assert.ok(input.chained && input.source.name === "Map", "chained to the map in front of the keyBy");
        assert.equal(node.parallelism, input.source.parallelism);
        const window = handle.plan.nodes.find((n) => n.operatorId === "windows")!;
        assert.equal(window.inputs[0]!.source, node, "the window reads the partials");
        assert.equal(window.inputs[0]!.partitioner.type, "key-group");
        let sent = 0;
        for (const m of result.metrics) for (const [k, v] of Object.entries(m.counters)) if (k.endsWith(".numPartialAggregatesSent")) sent += v;
        if (local === "config-off") assert.equal(sent, RECORDS, "turned off for the run: one partial per record, sent at once");
        else assert.ok(sent > 0 && sent < RECORDS / 5, `${sent} partials for ${RECORDS} records`);
      });
    }
    assert.deepEqual(results["on"], expected, "with local aggregation: the oracle's windows");
    assert.deepEqual(results["off"], expected, "without: the oracle's windows");
    assert.deepEqual(results["config-off"], expected, "turned off for the run: the oracle's windows");
  });
}

for (const [first, second] of [["off", "on"], ["on", "off"]] as const) {
  test(`local aggregation ${first} → savepoint part-way → ${second}: every window once, as the oracle`, { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "eddy-local-agg-"));
    try {
      const base: RunOptions = { mode: "inline", parallelism: 2, checkpointing: { intervalMs: 60_000 }, checkpointDir: join(dir, "checkpoints"), savepointDir: join(dir, "savepoints") };
      const rows: Row[] = [];
      const savepoint = await withEnv({ EDDY_LA_SHAPE: "tumbling-aggregate", EDDY_LA_LOCAL: first, EDDY_LA_PACE: "20" }, async () => {
        const handle = runJob(laJob, { ...base, jobId: "la-1" });
        while (handle.sourceRecords < RECORDS / 3 && handle.status() === "running") await new Promise((r) => setTimeout(r, 10));
        const stopped = await handle.stop({ savepoint: true });
        await handle.done;
        assert.equal(handle.status(), "stopped", "stopped part-way (the source was paced)");
        assert.ok(handle.sourceRecords < RECORDS, `the first run read ${handle.sourceRecords} of ${RECORDS} records`);
        rows.push(...handle.collected<Row>("rows"));
        return stopped!.path;
      });
      assert.ok(rows.length < oracle("tumbling-aggregate").length, `the first run committed ${rows.length} windows, not all`);
      // The savepoint holds windows in progress: the restored run finishes them.
      const reader = await openSavepoint(savepoint);
      assert.ok([...reader.keyedState("windows")].length > 0, "the savepoint holds window contents");
      const resumed = await withEnv({ EDDY_LA_SHAPE: "tumbling-aggregate", EDDY_LA_LOCAL: second }, async () => {
        const handle = runJob(laJob, { ...base, jobId: "la-2", fromSavepoint: savepoint });
        await handle.done;
        return handle.collected<Row>("rows");
      });
      // The first run shows what it committed: the windows fired before the savepoint's barrier
      // (a plain collect sink would also show those fired after it, before the job stopped, which
      // the restored run fires again). The restored sink commits the savepoint's transaction again:
      // the second run's output is the whole.
      const all = new Set(sorted(resumed));
      for (const r of sorted(rows)) assert.ok(all.has(r), `the first run's ${r} is in the whole`);
      assert.deepEqual(sorted(resumed), oracle("tumbling-aggregate"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test("local aggregation stays out of windows whose output it could change, and out when turned off", async () => {
  const sum = { createAccumulator: () => 0, add: (v: number, a: number) => a + v, getResult: (a: number) => a, merge: (a: number, b: number) => a + b };
  const { merge: _m, ...sumNoMerge } = sum;
  const late = new OutputTag<number>("late");
  const cases: [string, (s: ReturnType<typeof keyedOf>) => unknown][] = [
    ["allowed lateness", (k) => k.window(TumblingEventTimeWindows.of<number>(10)).allowedLateness(5).aggregate(sum)],
    ["a late-data side output", (k) => k.window(TumblingEventTimeWindows.of<number>(10)).sideOutputLateData(late).aggregate(sum)],
    ["a trigger", (k) => k.window(TumblingEventTimeWindows.of<number>(10)).trigger(CountTrigger.of(2)).aggregate(sum)],
    ["an aggregate without merge", (k) => k.window(TumblingEventTimeWindows.of<number>(10)).aggregate(sumNoMerge)],
    ["process", (k) => k.window(TumblingEventTimeWindows.of<number>(10)).process({ process: () => {} })],
    ["sessions by process", (k) => k.window(EventTimeSessionWindows.withGap<number>(10)).process({ process: () => {} })],
    ["processing time", (k) => k.window(TumblingProcessingTimeWindows.of<number>(10)).aggregate(sum)],
    ["turned off", (k) => k.window(TumblingEventTimeWindows.of<number>(10)).localAggregation(false).aggregate(sum)],
    ["(control: eligible)", (k) => k.window(TumblingEventTimeWindows.of<number>(10)).aggregate(sum)],
    ["(control: eligible sessions)", (k) => k.window(EventTimeSessionWindows.withGap<number>(10)).aggregate(sum)],
  ];
  function keyedOf(env: Parameters<Parameters<typeof defineJob>[1]>[0]) {
    return env
      .fromElements(1, 2, 3, 14)
      .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n))
      .keyBy((n) => n % 2);
  }
  for (const [what, build] of cases) {
    const handle = runJob(
      defineJob("not-eligible", (env) => {
        const out = build(keyedOf(env)) as { sinkTo(s: unknown): unknown };
        out.sinkTo(collectSink("out"));
      }),
      { mode: "inline" },
    );
    await handle.done;
    const inserted = handle.plan.nodes.some((n) => n.name.startsWith("LocalAggregation"));
    assert.equal(inserted, what.startsWith("(control"), `${what}: local aggregation ${inserted ? "inserted" : "absent"}`);
  }
});
