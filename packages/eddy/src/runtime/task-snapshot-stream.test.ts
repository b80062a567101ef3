/**
 * A task's checkpoint file is written as its sections are serialized, and the pooled buffers go
 * back to the pool as their bytes reach the disk: the task holds a few buffers, not its whole
 * state (holding it made V8 start a full collection for each 64 MiB of buffers: q18 ran 4-5×
 * longer with checkpoints on). Also the pool's size classes (a key group larger than a buffer).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { BufferPool, ByteReader, ByteWriter } from "../core/codec/bytes.ts";
import { LocalCheckpointStorage } from "../checkpoint/storage.ts";
import { encodeSnapshotFileStream, SnapshotFile } from "../checkpoint/format/container.ts";
import type { SharedFileRef } from "../state/incremental-snapshot.ts";
import { keyedSection } from "../checkpoint/format/task-snapshot.ts";
import { SectionBufferReturn, writeTaskSnapshot, type KeyedSnapshotPart, type OperatorSnapshot } from "./checkpointing.ts";

const MiB = 1024 * 1024;
const GROUPS = 48;
const GROUP_BYTES = 2.5 * MiB; // several groups per 4 MiB buffer, some straddling two

/** Checkpoint storage in a fresh directory, removed after the test. */
async function tempStorage(t: TestContext): Promise<LocalCheckpointStorage> {
  const dir = await mkdtemp(join(tmpdir(), "eddy-task-stream-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return new LocalCheckpointStorage({ rootDir: dir, jobId: "job" });
}

/** Operator "op" with a keyed part over key groups 0..groups-1: `keyed` says how it writes them. */
function keyedSnapshot(groups: number, keyed: Pick<KeyedSnapshotPart, "hasKeyGroup" | "writeKeyGroup"> & Partial<KeyedSnapshotPart>, operatorStates: OperatorSnapshot["operatorStates"] = []): OperatorSnapshot {
  return {
    operatorId: "op",
    operatorName: "Op",
    operatorStates,
    keyed: { keyGroupRange: { start: 0, end: groups - 1 }, states: [], watermark: 0, releaseKeyGroup: () => {}, release: () => {}, ...keyed },
  };
}

test("the buffer pool keeps buffers in sizes bufferBytes × 2^k: a larger request takes the next size, and gets a released one back", () => {
  const pool = new BufferPool(1024, 16 * 1024);
  const a = pool.acquire(1000);
  assert.equal(a.byteLength, 1024);
  const big = pool.acquire(3000);
  assert.equal(big.byteLength, 4096);
  pool.release([a, big, new ArrayBuffer(1500), new ArrayBuffer(512)]); // other sizes are left to the GC
  assert.equal(pool.retainedBytes, 1024 + 4096);
  assert.equal(pool.acquire(2100), big, "the released 4 KiB buffer");
  assert.equal(pool.acquire(10), a);
  assert.equal(pool.retainedBytes, 0);
  pool.release([a, a]);
  assert.equal(pool.retainedBytes, 1024, "a buffer released twice is kept once");
  pool.release([new ArrayBuffer(16 * 1024)]);
  assert.equal(pool.retainedBytes, 1024, "beyond maxRetainedBytes: not kept");
});

test("section buffers go back once every section in them is written and the writer has gone on to another buffer", () => {
  const pool = new BufferPool(64, 1024);
  const back = new SectionBufferReturn(pool);
  const a = pool.acquire(64);
  const b = pool.acquire(64);
  const a1 = new Uint8Array(a, 0, 8);
  const a2 = new Uint8Array(a, 8, 8);
  const b1 = new Uint8Array(b, 0, 8);
  back.handed(a1);
  back.handed(a2);
  back.written([a1]);
  assert.equal(pool.retainedBytes, 0, "a2 is not written yet");
  back.written([a2]);
  assert.equal(pool.retainedBytes, 0, "the writer may still write into a");
  back.handed(b1);
  assert.equal(pool.retainedBytes, 64, "a: all written, and the writer is in b");
  back.written([b1, new Uint8Array(16)]); // a chunk of no handed buffer is ignored
  assert.equal(pool.retainedBytes, 64, "b is the writer's");
  back.close();
  assert.equal(pool.retainedBytes, 128);
});

test("a task file of ~120 MB of keyed state is streamed: buffers held stay far below the file's size, and the file reads back section for section", async (t) => {
  const storage = await tempStorage(t);
  const released: number[] = [];
  const snapshot = keyedSnapshot(
    GROUPS,
    {
      hasKeyGroup: (kg) => kg !== 7,
      writeKeyGroup: (kg: number, out: ByteWriter) => {
        out.varuint(kg);
        for (let i = 0; i < GROUP_BYTES / 8; i++) out.f64(kg * 1e6 + i);
      },
      releaseKeyGroup: (kg) => void released.push(kg),
    },
    [{ name: "offsets", mode: "split", values: [1, 2, 3] }],
  );
  let maxHeld = 0;
  const base = process.memoryUsage().arrayBuffers;
  const measured: typeof storage = Object.create(storage) as typeof storage;
  measured.writeFile = (id, name, chunks, written) =>
    storage.writeFile(id, name, chunks, (batch) => {
      maxHeld = Math.max(maxHeld, process.memoryUsage().arrayBuffers - base);
      written?.(batch);
    });
  const { file, operators } = await writeTaskSnapshot([snapshot], measured, 3, "task-0-0.snap", (ops) => ({ operators: ops }));
  assert.ok(file !== null);
  assert.ok(file.size > GROUPS * GROUP_BYTES * 0.95, `file of ${file.size} bytes`);
  // The pool keeps up to 64 MiB; the stream holds one write batch (8 MiB) and the writer's buffer besides.
  assert.ok(maxHeld < 90 * MiB, `held ${Math.round(maxHeld / MiB)} MiB of buffers while writing a ${Math.round(file.size / MiB)} MiB file`);
  assert.equal(released.length, GROUPS - 1);
  assert.equal(operators.length, 1);
  assert.equal(operators[0]!.operatorStates[0]!.count, 3);
  const read = SnapshotFile.parse(await storage.readFile(3, file), { fileName: file.name, expectKind: "task" });
  assert.equal(read.version, 2);
  assert.deepEqual((read.meta as { operators: unknown }).operators, operators);
  for (const kg of [0, 6, 8, 47]) {
    const bytes = read.section(keyedSection("op"), kg)!;
    const reader = new ByteReader(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    assert.equal(reader.varuint(), kg);
    assert.equal(reader.f64(), kg * 1e6);
    assert.equal(bytes.byteLength, 1 + GROUP_BYTES);
  }
  assert.equal(read.section(keyedSection("op"), 7), undefined);
});

test("an incremental snapshot's shared file of ~120 MB is streamed the same way: its buffers go back as written", async (t) => {
  const storage = await tempStorage(t);
  let chain: readonly SharedFileRef[] | undefined;
  const snapshot = keyedSnapshot(GROUPS, {
    hasKeyGroup: () => false,
    writeKeyGroup: () => assert.fail("incremental: nothing in the task file"),
    writeSharedTimers: () => false,
    shared: {
      kind: "base",
      previous: Promise.resolve([]),
      writeKeyGroup: (kg: number, out: ByteWriter) => {
        for (let i = 0; i < GROUP_BYTES / 8; i++) out.f64(kg + i);
        return true;
      },
      settle: (c) => void (chain = c),
    },
  });
  let maxHeld = 0;
  const base = process.memoryUsage().arrayBuffers;
  // As the task executor writes it.
  const { file } = await writeTaskSnapshot([snapshot], storage, 1, "task-0-0.snap", (ops) => ({ operators: ops }), (_index, _id, kind, sections, buffers) =>
    storage.writeSharedFile(`task-0-0-0-${kind}-1-aa.kgs`, encodeSnapshotFileStream(kind, () => ({}), sections, (bytes) => buffers.handed(bytes)), (written) => {
      maxHeld = Math.max(maxHeld, process.memoryUsage().arrayBuffers - base);
      buffers.written(written);
    }),
  );
  assert.equal(file, null, "no section of the task file");
  assert.equal(chain?.length, 1);
  assert.ok(chain![0]!.size > GROUPS * GROUP_BYTES);
  assert.ok(maxHeld < 90 * MiB, `held ${Math.round(maxHeld / MiB)} MiB of buffers while writing a ${Math.round(chain![0]!.size / MiB)} MiB shared file`);
});

test("a task with nothing to write writes no file; a write that fails leaves no file and releases every keyed part", async (t) => {
  const storage = await tempStorage(t);
  const empty = await writeTaskSnapshot([{ operatorId: "op", operatorName: "Op", operatorStates: [], keyed: undefined }], storage, 1, "task-0-0.snap", (ops) => ({ operators: ops }));
  assert.equal(empty.file, null);
  assert.equal(empty.operators.length, 1);
  let releasedWhole = 0;
  const keyed = keyedSnapshot(4, { hasKeyGroup: () => true, writeKeyGroup: (kg: number, out: ByteWriter) => out.varuint(kg), release: () => void releasedWhole++ });
  const failing = { writeFile: () => Promise.reject(new Error("disk on fire")) };
  await assert.rejects(writeTaskSnapshot([keyed], failing, 2, "task-0-0.snap", (ops) => ({ operators: ops })), /disk on fire/);
  assert.ok(releasedWhole >= 1, "the keyed part is released although the serialization never finished");
  assert.deepEqual(await storage.listCheckpoints(), []);
});
