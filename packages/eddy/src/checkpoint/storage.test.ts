import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readFile, readdir, rename, rm, symlink, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EddyError } from "../core/errors.ts";
import { encodeSnapshotFile } from "./format/container.ts";
import { LocalCheckpointStorage, findLatestRestorable, readFileIn, readManifestIn, retain, writevBatches, type FileRef } from "./storage.ts";

interface TestManifest {
  readonly generation: number;
  readonly files: FileRef[];
}

const verifyFiles = (manifest: unknown): FileRef[] => (manifest as TestManifest).files;

async function tempStorage(t: TestContext): Promise<{ root: string; storage: LocalCheckpointStorage }> {
  const root = await mkdtemp(join(tmpdir(), "eddy-chk-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  return { root, storage: new LocalCheckpointStorage({ rootDir: root, jobId: "job-1" }) };
}

/** Writes one file per entry, then commits a manifest listing them. */
async function complete(storage: LocalCheckpointStorage, id: number, files: Record<string, Uint8Array> = { "op-1-0.snap": snapshot(id) }): Promise<TestManifest> {
  const refs: FileRef[] = [];
  for (const [name, bytes] of Object.entries(files)) refs.push(await storage.writeFile(id, name, [bytes]));
  const manifest = { generation: 1, files: refs };
  await storage.commitManifest(id, manifest);
  return manifest;
}

const snapshot = (id: number): Uint8Array => encodeSnapshotFile("task-snapshot", { id }, [{ name: "keyed", keyGroup: 0, bytes: Uint8Array.of(id, 1, 2) }]);

function hasCode(code: string, message?: RegExp): (e: unknown) => boolean {
  return (e) => e instanceof EddyError && e.code === code && (message === undefined || message.test(e.message));
}

test("round-trips files and the manifest; the directory holds only them", async (t) => {
  const { root, storage } = await tempStorage(t);
  const files = { "op-1-0.snap": snapshot(1), "op-2-1.snap": Uint8Array.of() };
  const manifest = await complete(storage, 1, files);
  assert.equal(storage.checkpointDir(1), join(root, "job-1", "chk-1"));
  assert.deepEqual((await readdir(storage.checkpointDir(1))).sort(), ["_manifest", "op-1-0.snap", "op-2-1.snap"]);
  assert.deepEqual(await storage.listCheckpoints(), [1]);
  assert.equal(await storage.hasManifest(1), true);
  assert.deepEqual(await storage.readManifest(1), manifest);
  for (const ref of manifest.files) assert.deepEqual(await storage.readFile(1, ref), files[ref.name as keyof typeof files]);
  assert.deepEqual(await findLatestRestorable(storage, { verifyFiles }), { checkpointId: 1, manifest });
});

test("lists checkpoint directories ascending, complete or not, and nothing else", async (t) => {
  const { storage } = await tempStorage(t);
  assert.deepEqual(await storage.listCheckpoints(), [], "no job directory yet");
  await complete(storage, 10);
  await storage.writeFile(2, "a", [Uint8Array.of(1)]);
  await complete(storage, 9);
  await writeFile(join(storage.checkpointDir(10), "..", "chk-11"), "a file, not a directory");
  await writeFile(join(storage.checkpointDir(10), "..", "notes.txt"), "");
  assert.deepEqual(await storage.listCheckpoints(), [2, 9, 10]);
  assert.equal(await storage.hasManifest(2), false);
});

test("a checkpoint whose manifest never got its final name does not exist", async (t) => {
  const { storage } = await tempStorage(t);
  const first = await complete(storage, 1);
  // Crash after writing the manifest's temp file, before the link to `_manifest`.
  const ref = await storage.writeFile(2, "op-1-0.snap", [snapshot(2)]);
  await writeFile(join(storage.checkpointDir(2), "_manifest.tmp"), encodeSnapshotFile("manifest", { generation: 1, files: [ref] }, []));
  assert.deepEqual(await storage.listCheckpoints(), [1, 2]);
  assert.equal(await storage.hasManifest(2), false);
  await assert.rejects(storage.readManifest(2), hasCode("CHECKPOINT_MISSING", /checkpoint 2 has no manifest/));
  const log: string[] = [];
  assert.deepEqual(await findLatestRestorable(storage, { verifyFiles, log: (m) => log.push(m) }), { checkpointId: 1, manifest: first });
  assert.match(log.join("\n"), /skipping checkpoint 2: checkpoint 2 has no manifest/);
});

test("the manifest is exclusive: a second commit is refused and changes nothing", async (t) => {
  const { storage } = await tempStorage(t);
  const manifest = await complete(storage, 3);
  await assert.rejects(storage.commitManifest(3, { generation: 0, files: [] }), hasCode("CHECKPOINT_ALREADY_COMMITTED"));
  await assert.rejects(storage.writeFile(3, "late.snap", [Uint8Array.of(1)]), hasCode("CHECKPOINT_ALREADY_COMMITTED"));
  assert.deepEqual(await storage.readManifest(3), manifest);
  assert.deepEqual((await readdir(storage.checkpointDir(3))).sort(), ["_manifest", "op-1-0.snap"], "no temp file left behind");
});

test("concurrent commits of one checkpoint: exactly one wins", async (t) => {
  const { storage } = await tempStorage(t);
  const results = await Promise.allSettled([1, 2, 3, 4].map((generation) => storage.commitManifest(5, { generation, files: [] })));
  const won = results.flatMap((r, i) => (r.status === "fulfilled" ? [i + 1] : []));
  assert.equal(won.length, 1);
  assert.deepEqual(await storage.readManifest(5), { generation: won[0], files: [] });
});

test("readFile tells a missing, a truncated and a corrupt file apart", async (t) => {
  const { storage } = await tempStorage(t);
  const ref = await storage.writeFile(1, "op.snap", [snapshot(1)]);
  const path = join(storage.checkpointDir(1), "op.snap");
  await assert.rejects(storage.readFile(1, { ...ref, size: ref.size + 1 }), hasCode("CHECKPOINT_CORRUPT", /'.*op\.snap' is truncated: \d+ bytes, the manifest lists \d+/));
  await assert.rejects(storage.readFile(1, { ...ref, size: ref.size - 1 }), hasCode("CHECKPOINT_CORRUPT", /is too long/));
  await assert.rejects(storage.readFile(1, { ...ref, sha256: "0".repeat(64) }), hasCode("CHECKPOINT_CORRUPT", /checksum mismatch: the manifest says sha256 0+/));
  await rm(path);
  await assert.rejects(storage.readFile(1, ref), hasCode("CHECKPOINT_MISSING", /'.*op\.snap' is missing/));
  await assert.rejects(storage.readManifest(1), hasCode("CHECKPOINT_MISSING"));
});

const damages: [string, (path: string) => Promise<void>, RegExp][] = [
  ["a flipped bit", flipBit, /checksum mismatch/],
  ["a truncated file", (path) => truncate(path, 10), /is truncated/],
  ["a missing file", (path) => rm(path), /is missing/],
];

for (const [what, damage, reason] of damages) {
  test(`restore falls back to the previous checkpoint past ${what}, and says which file`, async (t) => {
    const { storage } = await tempStorage(t);
    await complete(storage, 1);
    const previous = await complete(storage, 2);
    await complete(storage, 3, { "op-1-0.snap": snapshot(3), "op-2-0.snap": snapshot(30) });
    await storage.writeFile(4, "op-1-0.snap", [snapshot(4)]); // in progress: no manifest
    await damage(join(storage.checkpointDir(3), "op-2-0.snap"));
    const log: string[] = [];
    const found = await findLatestRestorable(storage, { verifyFiles, log: (m) => log.push(m) });
    assert.deepEqual(found, { checkpointId: 2, manifest: previous });
    assert.equal(log.length, 2);
    assert.match(log[0]!, /skipping checkpoint 4: .*no manifest/);
    assert.match(log[1]!, /skipping checkpoint 3: .*chk-3\/op-2-0\.snap'/);
    assert.match(log[1]!, reason);
  });
}

test("restore skips a checkpoint whose manifest is corrupt, and finds none when all are", async (t) => {
  const { storage } = await tempStorage(t);
  await complete(storage, 1);
  await complete(storage, 2);
  await flipBit(join(storage.checkpointDir(2), "_manifest"));
  const log: string[] = [];
  assert.equal((await findLatestRestorable(storage, { verifyFiles, log: (m) => log.push(m) }))?.checkpointId, 1);
  assert.match(log[0]!, /skipping checkpoint 2: checkpoint file '.*chk-2\/_manifest' checksum mismatch/);
  await truncate(join(storage.checkpointDir(1), "_manifest"), 3);
  assert.equal(await findLatestRestorable(storage, { verifyFiles }), undefined);
});

test("retain keeps the newest complete checkpoints and what may still be in progress", async (t) => {
  const { storage } = await tempStorage(t);
  for (const id of [1, 2, 4, 5, 6]) await complete(storage, id);
  await storage.writeFile(3, "x", [Uint8Array.of(1)]); // incomplete, older than 6
  await storage.writeFile(7, "x", [Uint8Array.of(1)]); // in progress, newer than 6
  assert.deepEqual(await retain(storage, 6, 2), [1, 2, 3, 4]);
  assert.deepEqual(await storage.listCheckpoints(), [5, 6, 7]);
  assert.deepEqual(await retain(storage, 6, 2), [], "idempotent");
  assert.deepEqual(await retain(storage, 6, 1), [5]);
  assert.deepEqual(await storage.listCheckpoints(), [6, 7]);
});

test("retain refuses to run around an incomplete checkpoint or to keep none", async (t) => {
  const { storage } = await tempStorage(t);
  await complete(storage, 1);
  await storage.writeFile(2, "x", [Uint8Array.of(1)]);
  await assert.rejects(retain(storage, 2, 3), hasCode("CHECKPOINT_NOT_COMPLETE"));
  await assert.rejects(retain(storage, 1, 0), hasCode("INVALID_RETAINED_CHECKPOINTS"));
  assert.deepEqual(await storage.listCheckpoints(), [1, 2]);
});

test("discard deletes one checkpoint's directory and nothing else", async (t) => {
  const { storage } = await tempStorage(t);
  await complete(storage, 1);
  await complete(storage, 2);
  await storage.discard(1);
  await storage.discard(1);
  assert.deepEqual(await storage.listCheckpoints(), [2]);
  assert.equal((await findLatestRestorable(storage, { verifyFiles }))?.checkpointId, 2);
});

test("refuses file names and job ids that are not one plain path segment", async (t) => {
  const { root, storage } = await tempStorage(t);
  const bad = ["", ".", "..", "../x", "a/b", "a\\b", "_manifest", "_manifest.tmp", ".hidden", "-x", "a b", "x\0", "a".repeat(129), "é"];
  for (const name of bad) {
    await assert.rejects(storage.writeFile(1, name, [Uint8Array.of()]), hasCode("INVALID_CHECKPOINT_NAME"), JSON.stringify(name));
    // A name read from a manifest is external input: a bad one makes the snapshot corrupt.
    await assert.rejects(storage.readFile(1, { name, size: 0, sha256: "" }), hasCode("CHECKPOINT_CORRUPT"), JSON.stringify(name));
    assert.throws(() => new LocalCheckpointStorage({ rootDir: root, jobId: name }), hasCode("INVALID_CHECKPOINT_NAME"), JSON.stringify(name));
  }
  for (const id of [-1, 1.5, Number.NaN, 2 ** 53]) {
    await assert.rejects(storage.writeFile(id, "a", [Uint8Array.of()]), hasCode("INVALID_CHECKPOINT_ID"));
  }
  await storage.writeFile(1, "a".repeat(128), [Uint8Array.of()]);
  await storage.writeFile(1, "Op_1-0.part.snap", [Uint8Array.of()]);
  assert.deepEqual(await readdir(root), ["job-1"], "nothing written outside the job directory");
});

test("a file written as chunks is their concatenation; its ref describes the whole file", async (t) => {
  const { storage } = await tempStorage(t);
  const whole = snapshot(5);
  // Cut at uneven places, with empty chunks, as a file built from section views would be.
  const chunks = [whole.subarray(0, 3), whole.subarray(3, 3), whole.subarray(3, 17), whole.subarray(17)];
  const ref = await storage.writeFile(5, "chunked.snap", chunks);
  const single = await storage.writeFile(5, "single.snap", [whole]);
  assert.deepEqual({ size: ref.size, sha256: ref.sha256 }, { size: single.size, sha256: single.sha256 });
  assert.equal(ref.size, whole.length);
  assert.deepEqual(await storage.readFile(5, ref), whole);
});

async function flipBit(path: string): Promise<void> {
  const bytes = await readFile(path);
  bytes[bytes.length >> 1]! ^= 0x04;
  await writeFile(path, bytes);
}

test("a file ref tells valid snapshot files apart: another valid file in its place is detected", async (t) => {
  const { root, storage } = await tempStorage(t);
  const a = await storage.writeFile(1, "a.snap", [snapshot(1)]);
  const b = await storage.writeFile(1, "b.snap", [snapshot(2)]);
  // A plain CRC-32 of a whole snapshot file is the same constant for every file (the trailer is
  // the CRC of the rest); the ref's checksum must not be.
  assert.notEqual(a.sha256, b.sha256);
  await writeFile(join(root, "job-1", "chk-1", "a.snap"), snapshot(2));
  await assert.rejects(storage.readFile(1, a), hasCode("CHECKPOINT_CORRUPT", /checksum mismatch/));
});

/** Makes a FIFO (Node has no mkfifo); false where there is no `mkfifo` (Windows). */
function mkfifo(path: string): boolean {
  return spawnSync("mkfifo", [path]).status === 0;
}

test("a snapshot directory's files must be regular files in it: links, FIFOs, devices and directories are refused", async (t) => {
  const { root, storage } = await tempStorage(t);
  await complete(storage, 1);
  const dir = storage.checkpointDir(1);
  const manifest = (await storage.readManifest(1)) as TestManifest;
  const ref = manifest.files[0]!;
  const task = join(dir, ref.name);
  const elsewhere = join(root, "elsewhere");
  await mkdir(elsewhere);

  // A link to an identical file outside the directory: right size and hash, still never read.
  await rename(task, join(elsewhere, ref.name));
  await symlink(join(elsewhere, ref.name), task);
  await assert.rejects(readFileIn(dir, ref), hasCode("CHECKPOINT_CORRUPT", /snapshot file '.*chk-1\/op-1-0\.snap' is a symbolic link: a snapshot's files must be regular files in its directory/));
  await rm(task);
  await symlink("/etc/passwd", task);
  await assert.rejects(readFileIn(dir, ref), hasCode("CHECKPOINT_CORRUPT", /is a symbolic link/));
  await rm(task);
  await mkdir(task);
  await assert.rejects(readFileIn(dir, ref), hasCode("CHECKPOINT_CORRUPT", /op-1-0\.snap' is a directory, not a regular file/));
  await rm(task, { recursive: true });
  if (mkfifo(task)) {
    // Opening a FIFO for reading waits for a writer: the open must not.
    await assert.rejects(readFileIn(dir, ref), hasCode("CHECKPOINT_CORRUPT", /op-1-0\.snap' is a FIFO, not a regular file/));
    await rm(task);
  }
  await copyFile(join(elsewhere, ref.name), task);
  assert.deepEqual(await readFileIn(dir, ref), snapshot(1), "the regular file reads");

  // The manifest: a link to a valid manifest elsewhere, to a device that never ends, a FIFO.
  const manifestPath = join(dir, "_manifest");
  await rename(manifestPath, join(elsewhere, "_manifest"));
  await symlink(join(elsewhere, "_manifest"), manifestPath);
  assert.throws(() => readManifestIn(dir, "checkpoint 1"), hasCode("CHECKPOINT_CORRUPT", /manifest '.*chk-1\/_manifest' is a symbolic link/));
  await rm(manifestPath);
  await symlink("/dev/zero", manifestPath);
  assert.throws(() => readManifestIn(dir, "checkpoint 1"), hasCode("CHECKPOINT_CORRUPT", /is a symbolic link/));
  await rm(manifestPath);
  if (mkfifo(manifestPath)) {
    assert.throws(() => readManifestIn(dir, "checkpoint 1"), hasCode("CHECKPOINT_CORRUPT", /_manifest' is a FIFO, not a regular file/));
    await rm(manifestPath);
  }
  await copyFile(join(elsewhere, "_manifest"), manifestPath);
  assert.deepEqual(readManifestIn(dir, "checkpoint 1"), manifest);
  // The directory itself may be a link: the user named it.
  await symlink(dir, join(root, "linked"));
  assert.deepEqual(readManifestIn(join(root, "linked"), "checkpoint 1"), manifest);
  assert.deepEqual(await readFileIn(join(root, "linked"), ref), snapshot(1));
});

/** Runs `work`, which must fail; returns its error and how far the resident set rose above where it was meanwhile. */
async function failureAndRssRise(work: () => Promise<unknown>): Promise<{ error: unknown; riseBytes: number; ms: number }> {
  const started = performance.now();
  const before = process.memoryUsage.rss();
  let peak = before;
  const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 1);
  try {
    const error = await work().then(
      () => assert.fail("expected a refusal"),
      (e: unknown) => e,
    );
    peak = Math.max(peak, process.memoryUsage.rss());
    return { error, riseBytes: peak - before, ms: performance.now() - started };
  } finally {
    clearInterval(sample);
  }
}

const MiB = 1024 * 1024;

test("sizes are checked before a byte is read, large files are verified in bounded memory, and a file over the limit names itself", async (t) => {
  const { storage } = await tempStorage(t);
  await complete(storage, 1);
  const dir = storage.checkpointDir(1);
  const ref = ((await storage.readManifest(1)) as TestManifest).files[0]!;
  const task = join(dir, ref.name);

  // Grown (sparse: no disk) far beyond the manifest's size: refused from its size alone.
  await truncate(task, 1_900_000_000);
  let r = await failureAndRssRise(() => readFileIn(dir, ref));
  assert.ok(hasCode("CHECKPOINT_CORRUPT", /op-1-0\.snap' is too long: 1900000000 bytes, the manifest lists \d+/)(r.error), String(r.error));
  assert.ok(r.riseBytes < 64 * MiB && r.ms < 1_000, `refused without reading: RSS +${r.riseBytes >> 20} MiB, ${r.ms} ms`);

  // The size the manifest lists, the wrong content: hashed in chunks, refused without holding the file.
  await truncate(task, 300 * MiB);
  r = await failureAndRssRise(() => readFileIn(dir, { ...ref, size: 300 * MiB }));
  assert.ok(hasCode("CHECKPOINT_CORRUPT", /op-1-0\.snap' checksum mismatch: the manifest says sha256/)(r.error), String(r.error));
  assert.ok(r.riseBytes < 100 * MiB, `verified in bounded memory: RSS +${r.riseBytes >> 20} MiB for a 300 MiB file`);

  // 2 GiB and more: Node's own error would not name the file.
  await truncate(task, 2 ** 31 + 100);
  await assert.rejects(
    readFileIn(dir, { ...ref, size: 2 ** 31 + 100 }),
    hasCode("CHECKPOINT_CORRUPT", /snapshot file '.*op-1-0\.snap' is 2147483748 bytes, more than the 2147483647 a snapshot file may have/),
  );

  // No manifest records the manifest's size: it has a maximum (a 64 MiB header and the container), checked before reading.
  await truncate(join(dir, "_manifest"), 65 * MiB);
  assert.throws(() => readManifestIn(dir, "checkpoint 1"), hasCode("CHECKPOINT_CORRUPT", /manifest '.*_manifest' is 68157440 bytes, more than the 67108888 a manifest may have/));
});

test("a checkpoint write the file system refuses for room is CHECKPOINT_STORAGE_FULL naming the file, and leaves no part behind", async (t) => {
  // A real refusal: a child process under a file size limit (`ulimit -f`, 8 blocks), whose writes
  // beyond it fail with EFBIG (Node ignores SIGXFSZ), as a full disk fails them with ENOSPC.
  const root = await mkdtemp(join(tmpdir(), "eddy-chk-full-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  const storageModule = new URL("./storage.ts", import.meta.url).pathname;
  const script = `
    import { LocalCheckpointStorage } from ${JSON.stringify(storageModule)};
    const s = new LocalCheckpointStorage({ rootDir: ${JSON.stringify(root)}, jobId: "job" });
    const out = [];
    for (const write of [() => s.writeSharedFile("task-0-0-0-base-1-ab.kgs", [new Uint8Array(256 * 1024)]), () => s.writeFile(1, "task-0-0.snap", [new Uint8Array(256 * 1024)])]) {
      try { await write(); out.push("written"); } catch (e) { out.push({ code: e.code, message: e.message }); }
    }
    console.log(JSON.stringify(out));`;
  const child = spawnSync("sh", ["-c", `ulimit -f 8 && exec "${process.execPath}" -C eddy-source --import tsx --input-type=module -e "$0"`, script], { encoding: "utf8" });
  assert.equal(child.status, 0, `the child failed: ${child.stderr}`);
  const results = JSON.parse(child.stdout.trim().split("\n").at(-1)!) as { code: string; message: string }[];
  assert.equal(results.length, 2);
  for (const [i, name] of ["task-0-0-0-base-1-ab.kgs", "task-0-0.snap"].entries()) {
    assert.equal(results[i]!.code, "CHECKPOINT_STORAGE_FULL", JSON.stringify(results[i]));
    assert.match(results[i]!.message, new RegExp(`no room to write checkpoint file '[^']*${name.replace(".", "\\.")}' \\(EFBIG`));
  }
  assert.deepEqual(await readdir(join(root, "job", "shared")), [], "no part of the shared file is left");
  assert.deepEqual(await readdir(join(root, "job", "chk-1")), [], "no part of the task file is left");
});

test("writes are cut into writev calls under a byte bound (a 2 GiB call got a wrapped byte count back), chunks split across calls, nothing lost or reordered", () => {
  const chunks = [new Uint8Array(0), Uint8Array.from({ length: 10 }, (_, i) => i), Uint8Array.from({ length: 25 }, (_, i) => 100 + i), Uint8Array.from([7])];
  const batches = [...writevBatches(chunks, 8)];
  for (const batch of batches) assert.ok(batch.reduce((n, c) => n + c.length, 0) <= 8, `a batch over the bound: ${batch.map((c) => c.length).join(",")}`);
  assert.equal(batches.length, 5); // 36 bytes in calls of at most 8
  const flat = (parts: readonly Uint8Array[]): number[] => parts.flatMap((c) => [...c]);
  assert.deepEqual(flat(batches.flat()), flat(chunks));
  // 1,024 chunks at most per call, whatever their size.
  const many = Array.from({ length: 2_500 }, () => new Uint8Array(1));
  assert.deepEqual([...writevBatches(many)].map((b) => b.length), [1024, 1024, 452]);
});

test("a task file over the 2 GiB a restore reads whole is refused before it is written (CHECKPOINT_FILE_TOO_LARGE), so no checkpoint lists a file no restore could read (shared files are streamed: streamed-shared-file.test.ts)", async (t) => {
  const root = await mkdtemp(join(tmpdir(), "eddy-chk-large-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  const s = new LocalCheckpointStorage({ rootDir: root, jobId: "job" });
  // 2,048 views of one MiB: 2 GiB, one byte over the bound, without allocating it.
  const mib = new Uint8Array(1024 * 1024);
  const chunks = [...Array.from({ length: 2048 }, () => mib), new Uint8Array(0)];
  await assert.rejects(s.writeFile(1, "task-0-0.snap", chunks), hasCode("CHECKPOINT_FILE_TOO_LARGE", /task-0-0\.snap' would be 2147483648 bytes/));
  assert.deepEqual(await readdir(join(root, "job", "chk-1")).catch(() => []), [], "nothing written");
});
