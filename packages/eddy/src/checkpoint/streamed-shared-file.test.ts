/**
 * Shared files of incremental checkpoints are streamed both ways (issue 29): written section by
 * section as they are serialized, and read back section by section after one verifying pass, so
 * their size is not bounded by the 2 GiB − 1 a task file may have (MAX_SNAPSHOT_FILE_BYTES, the
 * most a whole-file read takes). To run fast, this test lowers that bound to 64 KiB through the
 * internal variable EDDY_INTERNAL_MAX_SNAPSHOT_FILE_BYTES (set before the modules load) and writes
 * a shared file of ~0.5 MB: eight times the bound. A damaged file is still CHECKPOINT_CORRUPT.
 */
import assert from "node:assert/strict";
import { closeSync, fstatSync, futimesSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync, writeSync } from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

const BOUND = 64 * 1024;
process.env["EDDY_INTERNAL_MAX_SNAPSHOT_FILE_BYTES"] = String(BOUND);
const { ByteWriter } = await import("../core/codec/bytes.ts");
const { ManualClock } = await import("../core/clock.ts");
const { ValueStateDescriptor } = await import("../state/descriptors.ts");
const { DiskKeyedStateBackend } = await import("../state/disk-keyed-state-backend.ts");
const { encodeSnapshotFileStream } = await import("./format/container.ts");
const { chainKeyGroupCells, SHARED_BASE_KIND, SHARED_KEYED_SECTION } = await import("./format/keyed-chain.ts");
const { LocalCheckpointStorage, readFileIn } = await import("./storage.ts");
const { MAX_SNAPSHOT_FILE_BYTES } = await import("./untrusted-file.ts");

const root = mkdtempSync(join(tmpdir(), "eddy-streamed-shared-"));
after(() => rmSync(root, { recursive: true, force: true }));
const RANGE = { start: 0, end: 15 };
const KEYS = 2_000;
const state = new ValueStateDescriptor<{ id: number; pad: string }>("state");
const storage = new LocalCheckpointStorage({ rootDir: root, jobId: "job" });

/**
 * Replaces the file at `path` by `bytes` as a new file (another inode): this process remembers the
 * files it wrote or verified (untrusted-file.ts, verifiedFiles), and a change in place within the
 * kernel's file-time tick would look unchanged to it.
 */
function replaceFile(path: string, bytes: Uint8Array): void {
  writeFileSync(`${path}.new`, bytes);
  renameSync(`${path}.new`, path);
}

const hasCode = (code: string, message: RegExp) => (e: unknown) => {
  assert.equal((e as { code?: string }).code, code, String(e));
  assert.match((e as Error).message, message);
  return true;
};

/** A base of KEYS keys written as a checkpoint writes it: a stream of key-group sections. */
async function writeBase(name: string) {
  const b = new DiskKeyedStateBackend({ keyGroupRange: RANGE, clock: new ManualClock(0), storeDir: join(root, `src-${name}`), cacheSize: 100, incremental: true });
  for (let k = 0; k < KEYS; k++) {
    b.setCurrentKey(k, k % 16);
    b.getState(state).update({ id: k, pad: String.fromCharCode(97 + (k % 26)).repeat(200) });
  }
  const snapshot = b.snapshot({ incremental: true });
  let yielded = 0;
  function* sections() {
    const out = new ByteWriter(1024);
    for (let kg = RANGE.start; kg <= RANGE.end; kg++) {
      if (snapshot.shared!.writeKeyGroup(kg, out)) {
        yielded++;
        yield { name: SHARED_KEYED_SECTION, keyGroup: kg, bytes: out.take() };
      }
    }
  }
  const ref = await storage.writeSharedFile(name, encodeSnapshotFileStream(SHARED_BASE_KIND, () => ({ test: true }), sections()));
  snapshot.shared!.settle([ref]);
  const states = snapshot.states;
  snapshot.release();
  b.dispose();
  return { ref, states, yielded };
}

test("a shared file over the whole-file bound is written as a stream and restored section by section, every key back", async () => {
  assert.equal(MAX_SNAPSHOT_FILE_BYTES, BOUND, "the bound is lowered for this test");
  const { ref, states, yielded } = await writeBase("task-0-0-0-base-1-aa.kgs");
  assert.equal(yielded, 16);
  assert.ok(ref.size > 4 * BOUND, `the file (${ref.size} bytes) is well over the bound (${BOUND})`);
  const bytes = readFileSync(join(root, "job", "shared", ref.name));
  assert.equal(bytes[8], 2, "container version 2 (header after the body)");
  assert.equal(createHash("sha256").update(bytes).digest("hex"), ref.sha256);
  // A whole-file read refuses it: only the streamed reader can restore it.
  await assert.rejects(readFileIn(join(root, "job", "shared"), ref), hasCode("CHECKPOINT_CORRUPT", new RegExp(`more than the ${BOUND}`)));
  const file = await storage.openSharedFile(ref);
  assert.equal(file.kind, SHARED_BASE_KIND);
  assert.deepEqual(file.meta, { test: true });
  const restored = new DiskKeyedStateBackend({ keyGroupRange: RANGE, clock: new ManualClock(0), storeDir: join(root, "restored"), cacheSize: 100 });
  const byName = new Map(states.map((s) => [s.name, s]));
  for (let kg = RANGE.start; kg <= RANGE.end; kg++) {
    const cells = chainKeyGroupCells([file], kg, (name) => byName.get(name));
    assert.ok(cells !== undefined, `key group ${kg}`);
    restored.restoreKeyGroupCells(kg, cells, states);
  }
  for (let k = 0; k < KEYS; k++) {
    restored.setCurrentKey(k, k % 16);
    assert.deepEqual(restored.getState(state).value(), { id: k, pad: String.fromCharCode(97 + (k % 26)).repeat(200) });
  }
  restored.dispose();
});

test("a damaged streamed shared file is CHECKPOINT_CORRUPT: a wrong hash, a flipped bit under a matching hash (the file's CRC), a truncation, a section changed after the verifying pass (its own CRC)", async () => {
  const { ref } = await writeBase("task-0-0-0-base-2-bb.kgs");
  const path = join(root, "job", "shared", ref.name);
  const good = readFileSync(path);
  const sha = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");
  const flipped = Buffer.from(good);
  flipped[Math.floor(good.length / 2)]! ^= 0x04;
  replaceFile(path, flipped);
  await assert.rejects(storage.openSharedFile(ref), hasCode("CHECKPOINT_CORRUPT", /checksum mismatch: the manifest says sha256/));
  // The same damage under a ref that matches it: the whole-file CRC catches it.
  await assert.rejects(storage.openSharedFile({ ...ref, sha256: sha(flipped) }), hasCode("CHECKPOINT_CORRUPT", new RegExp(`'${ref.name}' checksum mismatch: stored 0x`)));
  replaceFile(path, good);
  truncateSync(path, good.length - 100);
  await assert.rejects(storage.openSharedFile(ref), hasCode("CHECKPOINT_CORRUPT", /is truncated: \d+ bytes, the manifest lists/));
  replaceFile(path, good);
  const file = await storage.openSharedFile(ref);
  replaceFile(path, flipped); // changed after it was verified
  const damaged = [...Array(16).keys()].map((kg) => {
    try {
      file.section(SHARED_KEYED_SECTION, kg);
      return undefined;
    } catch (e) {
      return e;
    }
  });
  const errors = damaged.filter((e) => e !== undefined);
  assert.equal(errors.length, 1, "exactly the section holding the flipped byte");
  assert.ok(hasCode("CHECKPOINT_CORRUPT", /section 'keyed' \(key group \d+\) checksum mismatch/)(errors[0]));
});

test("a shared file opened by its index reads only its header and trailer: the index's SHA-256 is the ref's, each section read is checked by its CRC, a damaged index or a wrong ref is CHECKPOINT_CORRUPT", async () => {
  const { ref } = await writeBase("task-0-0-0-base-3-cc.kgs");
  const path = join(root, "job", "shared", ref.name);
  const good = readFileSync(path);
  const sha = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");
  const headerLength = good.readUInt32LE(good.length - 12);
  assert.equal(ref.indexSha256, sha(good.subarray(good.length - 12 - headerLength)), "the ref records the SHA-256 of the header and trailer");
  // A body byte flipped: the index opens (the body is not read), the section holding it is refused.
  const flipped = Buffer.from(good);
  flipped[100]! ^= 0x04;
  replaceFile(path, flipped);
  const file = await storage.openSharedFile(ref, "index");
  const failures = [...Array(16).keys()].filter((kg) => {
    try {
      file.section(SHARED_KEYED_SECTION, kg);
      return false;
    } catch (e) {
      return hasCode("CHECKPOINT_CORRUPT", /section 'keyed' \(key group \d+\) checksum mismatch/)(e);
    }
  });
  assert.deepEqual(failures, [0], "the first section, which holds byte 100, and only it");
  // The same file opened whole: refused before any section is read.
  await assert.rejects(storage.openSharedFile(ref), hasCode("CHECKPOINT_CORRUPT", /checksum mismatch: the manifest says sha256/));
  // A byte of the header changed (a section's key group renamed would lose it silently): refused.
  const header = Buffer.from(good);
  const at = header.lastIndexOf('"keyGroup":1');
  header[at + '"keyGroup":'.length] = "9".charCodeAt(0);
  replaceFile(path, header);
  await assert.rejects(storage.openSharedFile(ref, "index"), hasCode("CHECKPOINT_CORRUPT", /index checksum mismatch: the manifest says sha256/));
  replaceFile(path, good);
  await assert.rejects(storage.openSharedFile({ ...ref, indexSha256: sha(Buffer.from("another")) }, "index"), hasCode("CHECKPOINT_CORRUPT", /index checksum mismatch/));
  truncateSync(path, good.length - 1);
  await assert.rejects(storage.openSharedFile(ref, "index"), hasCode("CHECKPOINT_CORRUPT", /is truncated: \d+ bytes, the manifest lists/));
  // A ref without an index checksum (written before there was one) is verified whole.
  replaceFile(path, flipped);
  const { indexSha256: _, ...older } = ref;
  await assert.rejects(storage.openSharedFile(older, "index"), hasCode("CHECKPOINT_CORRUPT", /checksum mismatch: the manifest says sha256/));
});

test("a shared file this process wrote, unchanged, is verified without reading its body again; a section failing its CRC makes the next verification read it whole (a damaged file fails one attempt, not every one)", async () => {
  const { ref } = await writeBase("task-0-0-0-base-4-dd.kgs");
  const path = join(root, "job", "shared", ref.name);
  // A byte of the body damaged in place, the file's times put back: to this process it looks as it wrote it.
  const fd = openSync(path, "r+");
  const before = fstatSync(fd);
  writeSync(fd, Buffer.from([0xff]), 0, 1, 100);
  futimesSync(fd, before.atime, (Math.trunc(before.mtimeMs) + 0.5) / 1000); // the same millisecond (mid-way: no float rounding out of it)
  closeSync(fd);
  const file = await storage.openSharedFile(ref); // whole, but known: only the header is read
  assert.throws(() => file.section(SHARED_KEYED_SECTION, 0), hasCode("CHECKPOINT_CORRUPT", /section 'keyed' \(key group 0\) checksum mismatch/));
  // The failure forgot the file: verified whole now, and refused.
  await assert.rejects(storage.openSharedFile(ref), hasCode("CHECKPOINT_CORRUPT", /checksum mismatch: the manifest says sha256/));
  await assert.rejects(storage.openSharedFile(ref), hasCode("CHECKPOINT_CORRUPT", /checksum mismatch: the manifest says sha256/), "and stays refused");
});

test("a task file streamed past the bound a restore reads whole stops there: CHECKPOINT_FILE_TOO_LARGE, nothing left behind, no chunk reported written that was not", async () => {
  const chunk = new Uint8Array(16 * 1024).fill(7);
  let pulled = 0;
  const written: Uint8Array[] = [];
  async function* chunks() {
    for (; pulled < 64; pulled++) yield chunk; // 1 MiB in all, 16× the bound
  }
  await assert.rejects(
    storage.writeFile(9, "task-0-0.snap", chunks(), (batch) => void written.push(...batch)),
    hasCode("CHECKPOINT_FILE_TOO_LARGE", /task-0-0\.snap' would be 81920 bytes or more, more than the 65536/),
  );
  assert.ok(pulled <= 5, `stopped at the chunk that crossed the bound (pulled ${pulled})`);
  assert.equal(written.length, 0, "nothing was reported written: the first batch never reached the disk");
  assert.deepEqual(readdirSafe(storage.checkpointDir(9)), [], "neither the file nor its temporary file");
});

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
