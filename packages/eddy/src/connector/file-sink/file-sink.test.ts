/**
 * The file sink through OperatorTestHarness.forSink, as a task runs it: buckets, names, rolling,
 * the in-progress → pending → committed life of a part, restore after a crash (truncation of what
 * was written past the checkpoint), counters across restore and rescale, bad bucket ids, CSV
 * quoting, Parquet read back by DuckDB.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { ManualClock } from "../../core/clock.ts";
import { EddyError } from "../../core/errors.ts";
import { OperatorTestHarness } from "../../testing/operator-harness.ts";
import type { Sink, SinkContext } from "../sink.ts";
import { FileSink } from "./file-sink.ts";

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 11, 1, 13, 5); // 2026-12-01 13:05 UTC

function withDir(fn: (dir: string) => Promise<void>): () => Promise<void> {
  return async () => {
    const dir = mkdtempSync(join(tmpdir(), "eddy-file-sink-"));
    try {
      await fn(dir);
    } finally {
      await removeDir(dir);
    }
  };
}

/**
 * A closed writer closes its files asynchronously, and a part it was opening may still appear after
 * the harness's (synchronous) close. rmSync's own retries only retry the last rmdir, never the
 * listing, so a file that appears between the two fails every retry: remove the whole tree again.
 */
async function removeDir(dir: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      rmSync(dir, { recursive: true, force: true });
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOTEMPTY" || attempt === 50) throw e;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** Every file under `dir`, relative, sorted. */
function files(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else out.push(relative(dir, join(d, e.name)));
    }
  };
  if (existsSync(dir)) walk(dir);
  return out.sort();
}
const visible = (dir: string): string[] => files(dir).filter((f) => !f.split("/").pop()!.startsWith("."));
const hidden = (dir: string): string[] => files(dir).filter((f) => f.split("/").pop()!.startsWith("."));
const lines = (dir: string): string[] => visible(dir).flatMap((f) => readFileSync(join(dir, f), "utf8").split("\n").filter((l) => l !== "")).sort();


/** The end of input and the job's final checkpoint, which commits what is left. */
async function finish(h: OperatorTestHarness<any, never>, checkpointId = 1000): Promise<void> {
  h.endInput();
  await h.settled();
  await h.snapshot(checkpointId);
  await h.settled();
  h.notifyCheckpointComplete(checkpointId);
  await h.settled();
  h.close();
}

interface Rec {
  readonly id: number;
  readonly text?: string;
}

test("event-time buckets by date pattern (UTC and a time zone), processing-time buckets from the clock, bucket functions", withDir(async (dir) => {
  const h = OperatorTestHarness.forSink(FileSink.ndjson<Rec>(join(dir, "et"), { buckets: { by: "event-time" } }));
  h.processElement({ id: 1 }, T0).processElement({ id: 2 }, T0 + HOUR).processElement({ id: 3 }, T0 + 1);
  await finish(h);
  assert.deepEqual(visible(join(dir, "et")), ["dt=2026-12-01/hour=13/part-0-0.ndjson", "dt=2026-12-01/hour=14/part-0-1.ndjson"]);

  const tz = OperatorTestHarness.forSink(FileSink.ndjson<Rec>(join(dir, "tz"), { buckets: { by: "event-time", pattern: "{yyyy}{MM}{dd}-{HH}{mm}", timeZone: "Asia/Kolkata" } }));
  tz.processElement({ id: 1 }, T0);
  await finish(tz);
  assert.deepEqual(visible(join(dir, "tz")), ["20261201-1835/part-0-0.ndjson"]);

  const clock = new ManualClock(T0);
  const pt = OperatorTestHarness.forSink(FileSink.ndjson<Rec>(join(dir, "pt"), { clock, buckets: { by: "processing-time", pattern: "{HH}" } }));
  pt.processElement({ id: 1 });
  await pt.settled();
  clock.advanceTo(T0 + 2 * HOUR);
  pt.processElement({ id: 2 });
  await finish(pt);
  assert.deepEqual(visible(join(dir, "pt")), ["13/part-0-0.ndjson", "15/part-0-1.ndjson"]);

  const fn = OperatorTestHarness.forSink(FileSink.ndjson<Rec>(join(dir, "fn"), { buckets: (r) => `kind=${r.id % 2 === 0 ? "even" : "odd"}` }));
  fn.processElement({ id: 1 }).processElement({ id: 2 }).processElement({ id: 3 });
  await finish(fn);
  assert.deepEqual(visible(join(dir, "fn")), ["kind=even/part-0-1.ndjson", "kind=odd/part-0-0.ndjson"]);
  assert.deepEqual(lines(join(dir, "fn")), ['{"id":1}', '{"id":2}', '{"id":3}']);
}));

test("a part is hidden while in progress and pending, and visible only once its checkpoint completed", withDir(async (dir) => {
  const h = OperatorTestHarness.forSink(FileSink.ndjson<Rec>(dir, { buckets: () => "", rollingPolicy: { rollOnCheckpoint: true } }));
  h.processElement({ id: 1 }).processElement({ id: 2 });
  await h.settled();
  assert.deepEqual(visible(dir), [], "in progress: nothing visible");
  await h.snapshot(1);
  await h.settled();
  assert.deepEqual(files(dir), [".part-0-0.ndjson.inprogress"], "pending: still hidden");
  assert.equal(readFileSync(join(dir, ".part-0-0.ndjson.inprogress"), "utf8"), '{"id":1}\n{"id":2}\n', "pending: complete and synced");
  h.processElement({ id: 3 });
  await h.settled();
  h.notifyCheckpointComplete(1);
  await h.settled();
  assert.deepEqual(files(dir), [".part-0-1.ndjson.inprogress", "part-0-0.ndjson"], "committed by an atomic rename; the next part in progress");
  h.close();
  assert.equal(readFileSync(join(dir, "part-0-0.ndjson"), "utf8"), '{"id":1}\n{"id":2}\n');
}));

test("committing the same checkpoint again (after a restore from it) has no further effect", withDir(async (dir) => {
  const sink = FileSink.ndjson<Rec>(dir, { buckets: () => "b", rollingPolicy: { rollOnCheckpoint: true } });
  const h = OperatorTestHarness.forSink(sink);
  h.processElement({ id: 1 });
  const snapshot = await h.snapshot(1);
  await h.settled();
  h.notifyCheckpointComplete(1);
  await h.settled();
  assert.deepEqual(files(dir), ["b/part-0-0.ndjson"]);
  // A restore from checkpoint 1 commits its committables again: the file is already in place.
  const h2 = OperatorTestHarness.forSink(sink, { restore: snapshot });
  await finish(h2);
  assert.deepEqual(files(dir), ["b/part-0-0.ndjson"]);
  assert.deepEqual(lines(dir), ['{"id":1}']);
}));

test("rolling: by size, on checkpoint, by rollover and inactivity intervals (checked at barriers)", withDir(async (dir) => {
  const bySize = OperatorTestHarness.forSink(FileSink.ndjson<Rec>(join(dir, "size"), { buckets: () => "", rollingPolicy: { maxPartSizeBytes: 20 } }));
  for (let id = 0; id < 5; id++) bySize.processElement({ id }); // 9 bytes each: a part holds 3 records
  await finish(bySize);
  assert.deepEqual(visible(join(dir, "size")), ["part-0-0.ndjson", "part-0-1.ndjson"]);
  assert.equal(readFileSync(join(dir, "size", "part-0-0.ndjson"), "utf8").split("\n").length - 1, 3);

  const clock = new ManualClock(0);
  const sink = FileSink.ndjson<Rec>(join(dir, "time"), { clock, buckets: () => "", rollingPolicy: { rolloverIntervalMs: 10_000, inactivityIntervalMs: 3_000 } });
  const h = OperatorTestHarness.forSink(sink);
  h.processElement({ id: 1 });
  await h.snapshot(1); // open 0 s: kept open, its length recorded
  await h.settled();
  clock.advanceTo(2_000);
  h.processElement({ id: 2 });
  await h.snapshot(2); // written at 2 s: active
  await h.settled();
  h.notifyCheckpointComplete(2);
  await h.settled();
  assert.deepEqual(visible(join(dir, "time")), [], "not rolled yet");
  clock.advanceTo(6_000);
  await h.snapshot(3); // inactive since 2 s > 3 s: rolled
  await h.settled();
  h.notifyCheckpointComplete(3);
  await h.settled();
  assert.deepEqual(visible(join(dir, "time")), ["part-0-0.ndjson"], "rolled for inactivity");
  for (let t = 7_000; t <= 18_000; t += 1_000) {
    clock.advanceTo(t);
    h.processElement({ id: t });
    await h.snapshot(t);
    await h.settled();
    h.notifyCheckpointComplete(t);
    await h.settled();
  }
  assert.deepEqual(visible(join(dir, "time")), ["part-0-0.ndjson", "part-0-1.ndjson"], "rolled 10 s after it opened (at 7 s)");
  h.close();
}));

test("restore after a crash: what was written past the checkpoint is cut off, the checkpoint's pending parts are committed, names are never reused", withDir(async (dir) => {
  // A tiny write buffer, so records past the checkpoint reach the file before the "crash".
  const sink = FileSink.ndjson<Rec>(dir, { buckets: (r) => (r.id < 100 ? "a" : "b"), writeBufferBytes: 16 });
  const h1 = OperatorTestHarness.forSink(sink);
  h1.processElement({ id: 1 }).processElement({ id: 2 }).processElement({ id: 100 });
  await h1.settled();
  const snapshot = await h1.snapshot(1); // both parts kept open, lengths recorded
  await h1.settled();
  for (let id = 3; id < 50; id++) h1.processElement({ id }); // past the checkpoint
  h1.processElement({ id: 200 });
  await h1.settled();
  // The writes run beside the task: wait until they reached the file.
  for (let i = 0; i < 200 && !readFileSync(join(dir, "a", ".part-0-0.ndjson.inprogress"), "utf8").includes('"id":49'); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(readFileSync(join(dir, "a", ".part-0-0.ndjson.inprogress"), "utf8").includes('"id":49'), "written past the checkpoint");
  // Crash: h1 commits nothing more (close only releases its file handles, as a dying process would).
  h1.close();
  const h2 = OperatorTestHarness.forSink(sink, { restore: snapshot });
  h2.processElement({ id: 7 }).processElement({ id: 300 });
  await h2.settled();
  await h2.snapshot(2);
  await h2.settled();
  h2.notifyCheckpointComplete(2);
  await h2.settled();
  await finish(h2);
  assert.deepEqual(lines(dir), ['{"id":100}', '{"id":1}', '{"id":2}', '{"id":300}', '{"id":7}']);
  assert.deepEqual(visible(dir), ["a/part-0-0.ndjson", "a/part-0-2.ndjson", "b/part-0-1.ndjson", "b/part-0-3.ndjson"]);
  assert.deepEqual(hidden(dir), [], "nothing left hidden");
}));

test("an in-progress part that is missing at restore fails the job naming it", withDir(async (dir) => {
  const sink = FileSink.ndjson<Rec>(dir, { buckets: () => "a" });
  const h1 = OperatorTestHarness.forSink(sink);
  h1.processElement({ id: 1 });
  const snapshot = await h1.snapshot(1);
  await h1.settled();
  h1.close();
  rmSync(join(dir, "a", ".part-0-0.ndjson.inprogress"));
  const h2 = OperatorTestHarness.forSink(sink, { restore: snapshot });
  h2.processElement({ id: 2 });
  await h2.settled();
  const failure = await h2.snapshot(2).then(() => h2.settled()).then(() => undefined, (e: unknown) => e);
  await h2.settled().catch(() => {});
  h2.close();
  assert.ok(failure instanceof EddyError, String(failure));
  assert.ok(((e: EddyError) => e.code === "FILE_SINK_RECOVERY_FAILED" && e.message.includes(".part-0-0.ndjson.inprogress") && /missing/.test(e.message))(failure), failure.message);
}));

/** Takes a checkpoint of writers directly (the contract's calls at a barrier). */
async function barrier<T>(writers: ReturnType<Sink<T>["createWriter"]>[]): Promise<{ committables: unknown[]; states: unknown[][] }> {
  const committables: unknown[] = [];
  const states: unknown[][] = [];
  for (const w of writers) {
    committables.push(...(await w.prepareCommit!()));
    states.push([...(await w.snapshotState!(1))]);
  }
  return { committables, states };
}

/** The runtime's division of a split state among `n` subtasks: round-robin over the concatenation. */
const divide = (states: unknown[][], n: number): unknown[][] => {
  const out: unknown[][] = Array.from({ length: n }, () => []);
  states.flat().forEach((e, i) => out[i % n]!.push(e));
  return out;
};

test("part counters stay unique across rescaling 2 → 3 → 1 → 3 (the state is divided round-robin)", withDir(async (dir) => {
  const sink = FileSink.ndjson<Rec>(dir, { buckets: () => "" });
  const ctx = (subtaskIndex: number, parallelism: number, restoredState?: unknown[]): SinkContext =>
    ({ subtaskIndex, parallelism, operatorName: "files", job: undefined as never, restoredState, reportBadRecord: () => {} });
  const run = async (parallelism: number, restored: unknown[][] | undefined): Promise<unknown[][]> => {
    const writers = Array.from({ length: parallelism }, (_, i) => sink.createWriter(ctx(i, parallelism, restored?.[i])));
    for (let r = 0; r < 3; r++) for (const w of writers) { await w.write({ id: r }, undefined); }
    const first = await barrier(writers); // parts kept open
    for (const w of writers) await w.flush!(true);
    const last = await barrier(writers); // end of input: all rolled
    await sink.createCommitter!(ctx(0, 1)).commit([...first.committables, ...last.committables]);
    for (const w of writers) await w.close!();
    return last.states;
  };
  let states = await run(2, undefined);
  states = await run(3, divide(states, 3));
  states = await run(1, divide(states, 1));
  await run(3, divide(states, 3));
  const names = visible(dir);
  assert.equal(new Set(names).size, names.length);
  // 2 + 3 + 1 + 3 writers, one part each.
  assert.equal(names.length, 9, names.join(", "));
  assert.equal(lines(dir).length, 27);
}));

test("a fresh job writing into a directory that has parts moves past their names", withDir(async (dir) => {
  writeFileSync(join(dir, "part-0-4.ndjson"), '{"old":true}\n');
  const h = OperatorTestHarness.forSink(FileSink.ndjson<Rec>(dir, { buckets: () => "" }));
  h.processElement({ id: 1 });
  await finish(h);
  assert.deepEqual(visible(dir), ["part-0-4.ndjson", "part-0-5.ndjson"]);
}));

test("a bucket id that is not a safe relative directory fails the task naming it", withDir(async (dir) => {
  for (const bad of ["../escape", "a/../../b", "/etc", "a\0b", 42]) {
    const h = OperatorTestHarness.forSink(FileSink.ndjson<Rec>(dir, { buckets: () => bad as string }));
    assert.throws(() => h.processElement({ id: 1 }), (e: EddyError) => e.code === "FILE_SINK_BAD_BUCKET" && e.message.includes(JSON.stringify(bad).slice(0, 8)), String(bad));
  }
  assert.deepEqual(files(dir), []);
}));

test("an I/O failure fails the task with a message naming the path", withDir(async (dir) => {
  writeFileSync(join(dir, "not-a-dir"), "x");
  const h = OperatorTestHarness.forSink(FileSink.ndjson<Rec>(join(dir, "not-a-dir"), { buckets: () => "b" }));
  h.processElement({ id: 1 });
  await assert.rejects(h.settled(), (e: EddyError) => e.code === "FILE_SINK_IO_FAILED" && e.message.includes(join(dir, "not-a-dir")));
}));

test("a directory the job may not write to fails the task with FILE_SINK_IO_FAILED saying permission denied, naming the path", withDir(async (dir) => {
  const out = join(dir, "read-only");
  mkdirSync(out, { mode: 0o555 });
  chmodSync(out, 0o555);
  // Root writes anywhere: the sink then runs in a child process as the unprivileged user 65534.
  for (let p = dir; p.startsWith(tmpdir() + "/"); p = dirname(p)) chmodSync(p, 0o755);
  const script = join(dir, "write.mts");
  writeFileSync(
    script,
    `import { FileSink } from ${JSON.stringify(new URL("./file-sink.ts", import.meta.url).href)};
     import { OperatorTestHarness } from ${JSON.stringify(new URL("../../testing/operator-harness.ts", import.meta.url).href)};
     const h = OperatorTestHarness.forSink(FileSink.ndjson(${JSON.stringify(out)}, { buckets: () => "b" }));
     try {
       h.processElement({ id: 1 });
       h.endInput();
       await h.settled();
       console.log(JSON.stringify({ code: "none" }));
     } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`,
  );
  const asUser = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  const child = spawnSync(process.execPath, ["--import", "tsx", script], { ...asUser, encoding: "utf8", cwd: import.meta.dirname });
  assert.equal(child.status, 0, child.stderr);
  const result = JSON.parse(child.stdout.trim().split("\n").pop()!) as { code: string; message: string };
  assert.equal(result.code, "FILE_SINK_IO_FAILED", child.stdout);
  assert.ok(result.message.includes(join(out, "b")) && result.message.includes("(permission denied)"), result.message);
}));

test("rolling by size counts UTF-8 bytes exactly: a part rolls right after the record that reaches the size, whatever the characters", withDir(async (dir) => {
  // Record texts are joined before they are encoded into the part's buffer (part-file.ts): the
  // size check bounds bytes by UTF-16 units and encodes only near the limit. A model rolls on
  // Buffer.byteLength; random sizes and characters of 1 to 4 bytes (a lone surrogate: 3) land the
  // limit inside records, on their ends, and far from them.
  const alphabet = ["a", "é", "日", "😀", "\ud800", ",", '"'];
  let seed = 7;
  const rnd = (n: number): number => ((seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) >>> 8) % n;
  for (let round = 0; round < 12; round++) {
    const max = 1 + rnd(round < 6 ? 60 : 3_000);
    const out = join(dir, `r${round}`);
    const h = OperatorTestHarness.forSink(FileSink.csv<Rec>(out, { buckets: () => "", columns: ["id", "text"], rollingPolicy: { maxPartSizeBytes: max } }));
    const header = "id,text\n"; // each part's first line, counted in its size
    const parts: string[] = [header];
    for (let id = 0; id < 400; id++) {
      let text = "";
      for (let n = rnd(30); n > 0; n--) text += alphabet[rnd(alphabet.length)];
      h.processElement({ id, text });
      const quoted = /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
      parts[parts.length - 1] += `${id},${quoted}\n`;
      if (Buffer.byteLength(parts[parts.length - 1]!, "utf8") >= max) parts.push(header);
    }
    await finish(h);
    const expected = parts.filter((p) => p !== header);
    const names = visible(out).sort((a, b) => Number(a.split("-")[2]!.split(".")[0]) - Number(b.split("-")[2]!.split(".")[0]));
    assert.equal(names.length, expected.length, `round ${round} (max ${max} bytes): parts`);
    names.forEach((name, i) => assert.deepEqual(readFileSync(join(out, name)), Buffer.from(expected[i]!, "utf8"), `round ${round} (max ${max} bytes): ${name}`));
  }
}));

test("CSV: a header per part, quoting of delimiters, quotes and line breaks (csv-stringify)", withDir(async (dir) => {
  const h = OperatorTestHarness.forSink(FileSink.csv<Rec>(dir, { buckets: () => "", columns: ["id", "text"], rollingPolicy: { maxPartSizeBytes: 30 } }));
  h.processElement({ id: 1, text: "a,b" }).processElement({ id: 2, text: 'say "hi"' }).processElement({ id: 3, text: "two\nlines" });
  await finish(h);
  assert.deepEqual(visible(dir), ["part-0-0.csv", "part-0-1.csv"]);
  assert.equal(readFileSync(join(dir, "part-0-0.csv"), "utf8"), 'id,text\n1,"a,b"\n2,"say ""hi"""\n');
  assert.equal(readFileSync(join(dir, "part-0-1.csv"), "utf8"), 'id,text\n3,"two\nlines"\n');
}));

test("Parquet: rolled at every checkpoint, readable by DuckDB", withDir(async (dir) => {
  const h = OperatorTestHarness.forSink(
    FileSink.parquet<{ k: string; v: number }>(dir, { buckets: () => "", rowGroupSize: 3, columns: [{ name: "k", type: "STRING" }, { name: "v", type: "DOUBLE" }] }),
  );
  for (let i = 0; i < 10; i++) h.processElement({ k: `k${i % 3}`, v: i });
  await h.snapshot(1);
  await h.settled();
  h.notifyCheckpointComplete(1);
  await h.settled();
  assert.deepEqual(files(dir), ["part-0-0.parquet"], "rolled at the checkpoint");
  for (let i = 10; i < 12; i++) h.processElement({ k: "k9", v: i });
  await finish(h);
  const { DuckDBInstance } = await import("@duckdb/node-api");
  const db = await DuckDBInstance.create(":memory:");
  const conn = await db.connect();
  const reader = await conn.runAndReadAll(`select k, count(*)::int as n, sum(v)::double as s from read_parquet('${dir}/*.parquet') group by k order by k`);
  assert.deepEqual(reader.getRowObjectsJson(), [
    { k: "k0", n: 4, s: 18 },
    { k: "k1", n: 3, s: 12 },
    { k: "k2", n: 3, s: 15 },
    { k: "k9", n: 2, s: 21 },
  ]);
  conn.closeSync();
}));
