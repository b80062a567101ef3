/**
 * The savepoint reader (eddy/savepoint) against a real checkpoint: a small keyed job with value,
 * list and map state, event- and processing-time timers and a source's split state runs with
 * checkpoints; its newest checkpoint taken while the source was still reading stands in for a
 * savepoint (a savepoint directory has exactly that shape). The checkpoint is copied elsewhere
 * and read there; its state is compared with a recomputation from the source position it
 * recorded. Then every kind of damaged or hostile directory is refused with a clear error.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, truncateSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { defineJob, ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor, WatermarkStrategy, type KeyedProcessFunction } from "eddy";
import { collectSink, runJob } from "eddy/testing";
import { openSavepoint, runInspectCommand, type SavepointReader } from "eddy/savepoint";
import {
  encodeSnapshotFile,
  SnapshotFile,
  fileChecksum,
  SOURCE_SPLITS_STATE,
  assignToKeyGroup,
} from "../packages/eddy/src/internal.ts";

const RECORDS = 200_000;
const KEYS = 12;
/**
 * Far in the future for both clocks: the timers stay pending in every checkpoint. (Processing
 * time within 24 days: SystemClock passes longer delays to setTimeout, which overflows them.)
 */
const EVENT_TIMER_AT = 10 ** 15;
const PROCESSING_TIMER_AT = Date.now() + 10 * 86_400_000;
const keyOf = (n: number): string => `k${n % KEYS}`;

const perKey: KeyedProcessFunction<string, number, number> = {
  processElement(n, ctx) {
    const count = ctx.getState(new ValueStateDescriptor<number>("count", { codec: { id: "count", version: 2 } }));
    count.update((count.value() ?? 0) + 1);
    if (n % 1000 === 0) ctx.getListState(new ListStateDescriptor<number>("thousands")).add(n);
    const byRest = ctx.getMapState(new MapStateDescriptor<number, number>("by-rest"));
    byRest.put(n % 3, (byRest.get(n % 3) ?? 0) + 1);
    ctx.timerService().registerEventTimeTimer(EVENT_TIMER_AT);
    ctx.timerService().registerProcessingTimeTimer(PROCESSING_TIMER_AT);
  },
};

const job = defineJob("savepoint-reader", (env) => {
  env
    .fromSequence(1, RECORDS)
    .uid("numbers")
    .setParallelism(1)
    .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n))
    .setParallelism(1)
    .keyBy(keyOf)
    .process(perKey)
    .uid("per-key")
    .sinkTo(collectSink("out"));
});

/** The checkpoint (kept: retained 1000) with the highest id whose source was still reading. */
async function midRunCheckpoint(dir: string): Promise<{ path: string; position: number }> {
  await runJob(job, { mode: "inline", parallelism: 2, checkpointing: { intervalMs: 5, retained: 1_000 }, checkpointDir: dir, jobId: "job" }).done;
  const ids = readdirSync(join(dir, "job"))
    .map((d) => Number(/^chk-(\d+)$/.exec(d)?.[1]))
    .filter((id) => Number.isInteger(id))
    .sort((a, b) => b - a);
  for (const id of ids) {
    const path = join(dir, "job", `chk-${id}`);
    const reader = await openSavepoint(path);
    const splits = reader.operatorState("numbers", SOURCE_SPLITS_STATE) as { position: number }[];
    if (splits.length === 1 && splits[0]!.position > 1) return { path, position: splits[0]!.position };
  }
  throw new Error(`no checkpoint of ${ids.length} was taken while the source was reading`);
}

let root: string | undefined;
let source: Promise<{ path: string; position: number }> | undefined;
/** The mid-run checkpoint, taken once for every test. */
function checkpoint(): Promise<{ path: string; position: number }> {
  root ??= mkdtempSync(join(tmpdir(), "eddy-savepoint-reader-"));
  source ??= midRunCheckpoint(join(root, "checkpoints"));
  return source;
}
after(() => {
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
});

let copies = 0;
/** A fresh copy of the checkpoint directory in another place (the savepoint under test). */
async function copy(): Promise<string> {
  const { path } = await checkpoint();
  const to = join(root!, `copy-${copies++}`, "my-savepoint");
  cpSync(path, to, { recursive: true });
  return to;
}

/** What the keyed operator held after reading records 1 .. position-1: the oracle. */
function recompute(position: number) {
  const count = new Map<string, number>();
  const thousands = new Map<string, number[]>();
  const byRest = new Map<string, Map<number, number>>();
  for (let n = 1; n < position; n++) {
    const k = keyOf(n);
    count.set(k, (count.get(k) ?? 0) + 1);
    if (n % 1000 === 0) thousands.set(k, [...(thousands.get(k) ?? []), n]);
    let m = byRest.get(k);
    if (m === undefined) byRest.set(k, (m = new Map()));
    m.set(n % 3, (m.get(n % 3) ?? 0) + 1);
  }
  return { count, thousands, byRest };
}

function cellsOf(reader: SavepointReader, state: string): Map<string, { value: unknown; keyGroup: number; namespace: unknown }> {
  const out = new Map<string, { value: unknown; keyGroup: number; namespace: unknown }>();
  for (const e of reader.keyedState("per-key", state)) {
    assert.equal(e.state, state);
    assert.ok(!out.has(e.key as string), `one cell per key (${String(e.key)})`);
    out.set(e.key as string, { value: e.value, keyGroup: e.keyGroup, namespace: e.namespace });
  }
  return out;
}

test("a savepoint copied to another directory reads back exactly what the job held at its source position", async () => {
  const { path: original, position } = await checkpoint();
  const path = await copy();
  rmSync(original, { recursive: true }); // relocatable: the original is gone
  source = Promise.resolve({ path, position }); // later tests copy from here
  const reader = await openSavepoint(path);
  assert.equal(reader.manifest.jobName, "savepoint-reader");
  const expected = recompute(position);

  const count = cellsOf(reader, "count");
  assert.deepEqual(new Map([...count].map(([k, c]) => [k, c.value])), expected.count);
  for (const [key, cell] of count) {
    assert.equal(cell.keyGroup, assignToKeyGroup(key, 128), `key group of ${key}`);
    assert.equal(cell.namespace, "");
  }
  assert.deepEqual(new Map([...cellsOf(reader, "thousands")].map(([k, c]) => [k, c.value])), expected.thousands);
  assert.deepEqual(new Map([...cellsOf(reader, "by-rest")].map(([k, c]) => [k, c.value])), expected.byRest);
  // Without a state name: every cell of every state.
  assert.equal([...reader.keyedState("per-key")].length, expected.count.size * 2 + expected.thousands.size);

  const timers = [...reader.timers("per-key")].map((t) => `${t.domain}:${String(t.key)}:${t.timestamp}:${t.namespace}:${t.keyGroup === assignToKeyGroup(t.key, 128)}`);
  const expectedTimers = [...expected.count.keys()].flatMap((k) => [`event:${k}:${EVENT_TIMER_AT}::true`, `processing:${k}:${PROCESSING_TIMER_AT}::true`]);
  assert.deepEqual(timers.sort(), expectedTimers.sort());

  const splits = reader.operatorState("numbers", SOURCE_SPLITS_STATE) as { position: number; to: number }[];
  assert.deepEqual(splits.map((s) => [s.position, s.to]), [[position, RECORDS]]);

  const ops = new Map(reader.operators().map((o) => [o.uid, o]));
  const perKeyOp = ops.get("per-key")!;
  assert.deepEqual(
    perKeyOp.keyedStates.map((s) => [s.name, s.kind, s.format, s.codec?.id, s.codec?.version]).sort(),
    [
      ["by-rest", "map", "eddy.default/3", undefined, undefined],
      ["count", "value", "eddy.default/3", "count", 2],
      ["thousands", "list", "eddy.default/3", undefined, undefined],
    ],
  );
  assert.equal(perKeyOp.hasTimers, true);
  assert.equal(perKeyOp.parallelism, 2);
  assert.deepEqual(perKeyOp.subtasks.map((s) => s.keyGroupRange), [{ start: 0, end: 63 }, { start: 64, end: 127 }]);
  assert.ok(perKeyOp.bytes > 0);
  const numbers = ops.get("numbers")!;
  assert.deepEqual(numbers.operatorStates, [{ name: SOURCE_SPLITS_STATE, mode: "split", count: 1 }]);
  assert.equal(numbers.hasTimers, false);
});

test("asking for an operator or state that is not there names what is", async () => {
  const reader = await openSavepoint(await copy());
  assert.throws(() => reader.keyedState("nope"), { code: "UNKNOWN_OPERATOR", message: /has no operator with uid 'nope' \(it has 'numbers', .*'per-key'/ });
  assert.throws(() => reader.keyedState("per-key", "sum"), { code: "UNKNOWN_STATE", message: /operator 'per-key' has no keyed state 'sum' \(it has 'count', 'by-rest', 'thousands'\)/ });
  assert.throws(() => reader.operatorState("per-key", "x"), { code: "UNKNOWN_STATE", message: /operator 'per-key' has no operator state 'x' \(it has none\)/ });
  assert.throws(() => reader.timers("nope"), { code: "UNKNOWN_OPERATOR" });
});

/** Rewrites the manifest after `edit`, with a valid container CRC: hostile, not damaged. */
function editManifest(dir: string, edit: (m: any) => void): void {
  const file = join(dir, "_manifest");
  const manifest = SnapshotFile.parse(new Uint8Array(readFileSync(file)), { fileName: file }).meta as any;
  edit(manifest);
  writeFileSync(file, encodeSnapshotFile("manifest", manifest, []));
}

/** The task file of the keyed operator's subtask 0. */
const TASK = "task-1-0.snap";

function flipBit(file: string, at: (size: number) => number): void {
  const bytes = readFileSync(file);
  const i = at(bytes.length);
  bytes[i] = bytes[i]! ^ 0x10;
  writeFileSync(file, bytes);
}

async function refused(dir: string, code: string, message: RegExp): Promise<void> {
  await assert.rejects(openSavepoint(dir), (e: any) => {
    assert.equal(e.code, code, e.message);
    assert.match(e.message, message);
    return true;
  });
}

test("damaged savepoints are refused, naming the file and the fault", async () => {
  let dir = await copy();
  truncateSync(join(dir, TASK), 100);
  await refused(dir, "CHECKPOINT_CORRUPT", new RegExp(`'${dir}/${TASK}' is truncated: 100 bytes, the manifest lists \\d+`));

  dir = await copy();
  flipBit(join(dir, TASK), (n) => n >> 1);
  await refused(dir, "CHECKPOINT_CORRUPT", new RegExp(`'${dir}/${TASK}' checksum mismatch: the manifest says sha256 [0-9a-f]{64}, the file has`));

  // The manifest agrees with the damaged file: the file's own CRC still catches it.
  dir = await copy();
  flipBit(join(dir, TASK), (n) => n - 20);
  const damaged = new Uint8Array(readFileSync(join(dir, TASK)));
  editManifest(dir, (m) => (m.tasks.find((t: any) => t.file?.name === TASK).file.sha256 = fileChecksum(damaged)));
  await refused(dir, "CHECKPOINT_CORRUPT", new RegExp(`'${dir}/${TASK}' checksum mismatch: stored 0x[0-9a-f]{8}, computed 0x`));

  dir = await copy();
  flipBit(join(dir, "_manifest"), (n) => n >> 1);
  await refused(dir, "CHECKPOINT_CORRUPT", /_manifest' checksum mismatch/);

  dir = await copy();
  unlinkSync(join(dir, TASK));
  await refused(dir, "CHECKPOINT_MISSING", new RegExp(`'${dir}/${TASK}' is missing`));

  dir = await copy();
  unlinkSync(join(dir, "_manifest"));
  await refused(dir, "CHECKPOINT_MISSING", /not a savepoint or complete checkpoint directory\) has no manifest/);
});

test("hostile manifests are refused before any file they name is read", async () => {
  // A file outside the directory, with the right size and hash: still never read.
  let dir = await copy();
  cpSync(join(dir, TASK), join(dir, "..", "outside.snap"));
  editManifest(dir, (m) => (m.tasks.find((t: any) => t.file?.name === TASK).file.name = "../outside.snap"));
  await refused(dir, "CHECKPOINT_CORRUPT", /savepoint '.*': task 1-0 names file "..\/outside.snap", which is not a plain file name in the directory/);

  dir = await copy();
  editManifest(dir, (m) => (m.tasks.find((t: any) => t.file?.name === TASK).operators.find((o: any) => o.keyed).keyed.states[0].format = "eddy.columnar/9"));
  await refused(dir, "CHECKPOINT_UNSUPPORTED", /state '\w+' of operator 'per-key' is written in format 'eddy.columnar\/9', which this Eddy cannot read/);

  dir = await copy();
  editManifest(dir, (m) => (m.tasks.find((t: any) => t.file?.name === "task-1-1.snap").operators.find((o: any) => o.keyed).keyed.keyGroupRange.end = 128));
  await refused(dir, "CHECKPOINT_CORRUPT", /operator 'per-key' subtask 1 has key-group range \[64, 128\], not within \[0, 127\] \(max parallelism 128\)/);

  dir = await copy();
  editManifest(dir, (m) => (m.version = 99));
  await refused(dir, "CHECKPOINT_UNSUPPORTED_VERSION", /savepoint '.*': manifest version 99 \(this Eddy reads 1\)/);

  // Two task files swapped, each listed with the other's size and hash: the files' own metas disagree.
  dir = await copy();
  editManifest(dir, (m) => {
    const [a, b] = [m.tasks.find((t: any) => t.file?.name === TASK), m.tasks.find((t: any) => t.file?.name === "task-1-1.snap")];
    [a.file, b.file] = [b.file, a.file];
  });
  await refused(dir, "CHECKPOINT_CORRUPT", /file 'task-1-1.snap' is not task 1-0 of checkpoint \d+/);
});

test("cells filed under a key group their keys do not hash to are refused when read", async () => {
  const dir = await copy();
  const path = join(dir, TASK);
  const file = SnapshotFile.parse(new Uint8Array(readFileSync(path)), { fileName: path });
  const keyed = file.sections.filter((s) => s.name === "per-key/keyed");
  const used = new Set(keyed.map((s) => s.keyGroup));
  const free = [...Array(64).keys()].find((kg) => !used.has(kg))!;
  // A well-formed file (valid CRCs, listed with its hash) whose first key group moved to `free`.
  const sections = file.sections.map((s) => ({
    name: s.name,
    ...(s.keyGroup === undefined ? {} : { keyGroup: s === keyed[0] ? free : s.keyGroup }),
    bytes: file.section(s.name, s.keyGroup)!,
  }));
  const bytes = encodeSnapshotFile("task", file.meta, sections);
  writeFileSync(path, bytes);
  editManifest(dir, (m) => (m.tasks.find((t: any) => t.file?.name === TASK).file = { name: TASK, size: bytes.length, sha256: fileChecksum(bytes) }));
  const reader = await openSavepoint(dir);
  assert.throws(() => [...reader.keyedState("per-key")], {
    code: "CHECKPOINT_CORRUPT",
    message: new RegExp(`file '${TASK}': key group ${free} of operator 'per-key' cannot be read: key "k\\d+" belongs in key group ${keyed[0]!.keyGroup}`),
  });
});

test("eddy savepoint inspect prints the operators and their states, or one JSON document", async () => {
  const { position } = await checkpoint();
  const dir = await copy();
  const run = async (argv: string[]) => {
    let stdout = "";
    let stderr = "";
    const code = await runInspectCommand(argv, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s) });
    return { code, stdout, stderr };
  };
  const text = await run([dir]);
  assert.equal(text.code, 0, text.stderr);
  for (const expected of ["job          savepoint-reader", "Operator per-key", "Operator numbers", "keyed state 'count': value, codec count v2, format eddy.default/3", "'thousands'", "'by-rest'", "operator state 'source-splits': split, 1 values", "subtask 1: key groups 64-127"]) {
    assert.ok(text.stdout.includes(expected), `${JSON.stringify(expected)} in:\n${text.stdout}`);
  }
  const json = await run([dir, "--json"]);
  assert.equal(json.code, 0, json.stderr);
  const doc = JSON.parse(json.stdout);
  const perKeyOp = doc.operators.find((o: any) => o.uid === "per-key");
  const keys = recompute(position).count.size;
  assert.equal(perKeyOp.keyedStates.find((s: any) => s.name === "count").entries, keys);
  assert.equal(perKeyOp.timers, 2 * keys);
  assert.equal(doc.checkpoint.isSavepoint, false);

  assert.equal((await run([])).code, 2);
  assert.equal((await run([dir, "--yaml"])).code, 2);
  truncateSync(join(dir, TASK), 50);
  const corrupt = await run([dir]);
  assert.equal(corrupt.code, 1);
  assert.match(corrupt.stderr, /^eddy: snapshot file '.*task-1-0.snap' is truncated/);
});

/** A copy of the checkpoint marked as a savepoint, as `--from-savepoint` wants. */
async function savepointCopy(): Promise<string> {
  const dir = await copy();
  editManifest(dir, (m) => (m.isSavepoint = true));
  return dir;
}

/** Starts the job from `from`; the restore must refuse with `code` and `message`, at the start or once running. */
async function restoreRefused(from: { fromSavepoint?: string; fromCheckpoint?: string }, code: string, message: RegExp): Promise<void> {
  const check = (e: any): boolean => {
    assert.equal(e.code, code, e.message);
    assert.match(e.message, message);
    return true;
  };
  let started;
  try {
    started = runJob(job, { mode: "inline", parallelism: 2, checkpointing: { intervalMs: 60_000 }, checkpointDir: join(root!, "restored"), restartStrategy: { type: "none" }, ...from });
  } catch (e) {
    check(e);
    return;
  }
  await assert.rejects(started.done, check);
}

test("a savepoint's files must be regular files in it: links out of it and FIFOs are refused by inspect and by a restore", async () => {
  // `_manifest` a link to a valid manifest elsewhere.
  let dir = await savepointCopy();
  renameSync(join(dir, "_manifest"), join(dir, "..", "elsewhere"));
  symlinkSync(join(dir, "..", "elsewhere"), join(dir, "_manifest"));
  await refused(dir, "CHECKPOINT_CORRUPT", /_manifest' is a symbolic link: a snapshot's files must be regular files in its directory/);
  await restoreRefused({ fromSavepoint: dir }, "CHECKPOINT_CORRUPT", /_manifest' is a symbolic link/);
  const asCheckpoint = join(dir, "..", "chk-5");
  renameSync(dir, asCheckpoint);
  await restoreRefused({ fromCheckpoint: asCheckpoint }, "CHECKPOINT_CORRUPT", /_manifest' is a symbolic link/);

  // A task file a link to an identical file outside the directory (right size and hash).
  dir = await savepointCopy();
  renameSync(join(dir, TASK), join(dir, "..", TASK));
  symlinkSync(join(dir, "..", TASK), join(dir, TASK));
  await refused(dir, "CHECKPOINT_CORRUPT", new RegExp(`'${dir}/${TASK}' is a symbolic link`));
  await restoreRefused({ fromSavepoint: dir }, "CHECKPOINT_CORRUPT", new RegExp(`${TASK}' is a symbolic link`));

  // A FIFO would hang the open of a reader waiting for a writer.
  dir = await savepointCopy();
  unlinkSync(join(dir, TASK));
  if (spawnSync("mkfifo", [join(dir, TASK)]).status === 0) {
    await refused(dir, "CHECKPOINT_CORRUPT", new RegExp(`'${dir}/${TASK}' is a FIFO, not a regular file`));
  }
});

/** The manifest of `dir` as JSON text, as `edit` changes the text (to write what no writer would). */
function editManifestText(dir: string, edit: (json: string) => string): void {
  const file = join(dir, "_manifest");
  const meta = SnapshotFile.parse(new Uint8Array(readFileSync(file)), { fileName: file }).meta;
  // The container by hand (layout: docs/design/checkpoint-files.md): encodeSnapshotFile refuses such headers.
  const header = Buffer.from(`{"kind":"manifest","meta":${edit(JSON.stringify(meta))},"sections":[]}`);
  const head = Buffer.alloc(16);
  head.write("EDDYCKPT", 0, "latin1");
  head.writeUInt16LE(1, 8);
  head.writeUInt32LE(header.length, 12);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc32(Buffer.concat([head, header])), 0);
  trailer.write("EDDY", 4, "latin1");
  writeFileSync(file, Buffer.concat([head, header, trailer]));
}

test("a manifest nested 100,000 deep, or claiming 1e12 operator-state values, is refused with a clear message", async () => {
  const depth = 100_000;
  let dir = await savepointCopy();
  editManifestText(dir, (json) => `${json.slice(0, -1)},"extra":${"[".repeat(depth)}${"]".repeat(depth)}}`);
  await refused(dir, "CHECKPOINT_CORRUPT", /_manifest' has a header nested deeper than 64 levels/);
  // Refused when the job starts: worker threads would get it by structured clone, which recursed until the stack overflowed.
  await restoreRefused({ fromSavepoint: dir }, "CHECKPOINT_CORRUPT", /nested deeper than 64 levels/);

  dir = await savepointCopy();
  editManifest(dir, (m) => (m.tasks.find((t: any) => t.operators.some((o: any) => o.operatorId === "numbers")).operators[0].operatorStates[0].count = 1e12));
  await refused(dir, "CHECKPOINT_CORRUPT", /task \d+-0 counts 1000000000000 operator-state values, more than the \d+ bytes of its file 'task-\d+-0\.snap' could hold/);

  // A count the file could hold, but not the one it holds: refused when the state is decoded.
  dir = await savepointCopy();
  editManifest(dir, (m) => (m.tasks.find((t: any) => t.operators.some((o: any) => o.operatorId === "numbers")).operators[0].operatorStates[0].count = 2));
  const reader = await openSavepoint(dir);
  assert.throws(() => reader.operatorState("numbers", SOURCE_SPLITS_STATE), { code: "CHECKPOINT_CORRUPT", message: /operator state 'source-splits' of '.*' holds 1 values, its description says 2/ });
  await restoreRefused({ fromSavepoint: dir }, "CHECKPOINT_CORRUPT", /operator state 'source-splits' of '.*' holds 1 values, its description says 2/);
});

test("a task file far larger than the manifest says is refused from its size, before it is read", async () => {
  let dir = await copy();
  truncateSync(join(dir, TASK), 1_900_000_000); // sparse: costs no disk
  const rssBefore = process.memoryUsage.rss();
  const started = performance.now();
  await refused(dir, "CHECKPOINT_CORRUPT", new RegExp(`'${dir}/${TASK}' is too long: 1900000000 bytes, the manifest lists \\d+`));
  const ms = performance.now() - started;
  const riseMiB = (process.memoryUsage.rss() - rssBefore) >> 20;
  assert.ok(ms < 1_000 && riseMiB < 256, `refused without reading it: ${Math.round(ms)} ms, RSS +${riseMiB} MiB`);

  // At 2 GiB and more, Node's own error ("File size ... is greater than 2 GiB") did not name the file.
  dir = await copy();
  truncateSync(join(dir, TASK), 2 ** 31 + 100);
  editManifest(dir, (m) => (m.tasks.find((t: any) => t.file?.name === TASK).file.size = 2 ** 31 + 100));
  await refused(dir, "CHECKPOINT_CORRUPT", new RegExp(`file '${TASK}' has 2147483748 bytes, more than the 2147483647 a snapshot file may have`));
});
