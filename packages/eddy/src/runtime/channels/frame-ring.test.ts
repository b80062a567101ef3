/**
 * The shared-memory frame ring: frames arrive whole and in order through any number of
 * wrap-arounds, frames larger than the ring are cut and joined, a full ring holds frames back on
 * the writer's side (in order) until the reader frees room, credit and room wake the other side,
 * and a frame whose writer stops half way is never delivered. The last test runs the writer on
 * another thread.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Worker } from "node:worker_threads";
import fc from "fast-check";
import { createFrameRing, FrameRingReader, FrameRingWriter } from "./frame-ring.ts";

/** A frame whose bytes say which frame it is and how long: any mix-up or tear shows. */
function frame(seq: number, length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (seq * 31 + i * 7) & 0xff;
  return bytes;
}

function checkFrame(bytes: Uint8Array, seq: number, length: number): void {
  assert.equal(bytes.length, length, `frame ${seq}: length`);
  for (let i = 0; i < length; i++) if (bytes[i] !== ((seq * 31 + i * 7) & 0xff)) assert.fail(`frame ${seq}: byte ${i} differs`);
}

test("frames of any size arrive whole and in order through many wrap-arounds, in any interleaving of writer and reader", () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 3000 })), { minLength: 1, maxLength: 200 }),
      fc.array(fc.boolean(), { minLength: 1, maxLength: 64 }),
      (lengths, schedule) => {
        const ring = createFrameRing(1024);
        let readerWoken = 0;
        const writer = new FrameRingWriter(ring, () => readerWoken++);
        const reader = new FrameRingReader(ring, () => {});
        let sent = 0;
        let received = 0;
        for (let step = 0; received < lengths.length; step++) {
          const write = sent < lengths.length && (schedule[step % schedule.length] === true || received === sent);
          if (write) {
            writer.send(frame(sent, lengths[sent]!));
            sent++;
          } else {
            const got = reader.peek();
            if (got === undefined) {
              assert.ok(!writer.hasRoom || received < sent, "nothing to read although everything sent was read");
              continue;
            }
            checkFrame(got, received, lengths[received]!);
            assert.equal(reader.peek(), got, "peek returns the same frame until it is released");
            reader.release();
            received++;
          }
          assert.ok(step < 1_000_000, "no progress");
        }
        assert.equal(writer.heldFrames, 0);
        assert.equal(reader.hasData, false);
        assert.ok(readerWoken > 0);
      },
    ),
    { numRuns: 200 },
  );
});

test("a full ring holds frames back in order until the reader frees room, and then wakes the writer", () => {
  const ring = createFrameRing(1024);
  let writerWoken = 0;
  const writer = new FrameRingWriter(ring, () => {});
  const reader = new FrameRingReader(ring, () => writerWoken++);
  // 200-byte frames take 208 bytes of the ring: four fit in 1,024 bytes, the rest are held.
  for (let seq = 0; seq < 10; seq++) writer.send(frame(seq, 200));
  assert.equal(writer.hasRoom, false);
  assert.equal(writer.heldFrames, 6);
  let received = 0;
  while (received < 10) {
    const got = reader.peek();
    assert.ok(got !== undefined, `frame ${received} is readable once the writer got room`);
    checkFrame(got, received, 200);
    reader.release();
    received++;
    // The writer moves held frames on when it next looks for room.
    void writer.hasRoom;
  }
  assert.equal(writer.hasRoom, true);
  assert.ok(writerWoken > 0, "releasing room while frames were held woke the writer");
});

test("the reader keeps a frame's room until it is released, and a frame held that way is not overwritten", () => {
  const ring = createFrameRing(1024);
  const writer = new FrameRingWriter(ring, () => {});
  const reader = new FrameRingReader(ring, () => {});
  writer.send(frame(0, 200));
  const first = reader.peek()!;
  for (let seq = 1; seq < 4; seq++) writer.send(frame(seq, 200)); // fit beside the held frame
  writer.send(frame(4, 200)); // does not: held by the writer
  assert.equal(writer.heldFrames, 1);
  checkFrame(first, 0, 200);
  reader.release();
  assert.equal(writer.hasRoom, true);
  for (let seq = 1; seq <= 4; seq++) {
    checkFrame(reader.peek()!, seq, 200);
    reader.release();
  }
  assert.equal(reader.peek(), undefined);
});

test("credit returned by the reader reaches the writer once, and wakes it", () => {
  const ring = createFrameRing(256);
  let writerWoken = 0;
  const writer = new FrameRingWriter(ring, () => {});
  const reader = new FrameRingReader(ring, () => writerWoken++);
  assert.equal(writer.takeCredit(), 0);
  reader.returnCredit(64);
  reader.returnCredit(36);
  assert.equal(writerWoken, 2);
  assert.equal(writer.takeCredit(), 100);
  assert.equal(writer.takeCredit(), 0);
});

test("a frame whose writer stops between its fragments is never delivered", () => {
  const ring = createFrameRing(256);
  const writer = new FrameRingWriter(ring, () => {});
  const reader = new FrameRingReader(ring, () => {});
  writer.send(frame(0, 1000)); // far larger than the ring: fragments, most of them held
  assert.ok(writer.heldFrames > 0);
  // The writer's thread dies here: it never moves its held fragments on.
  for (let i = 0; i < 10; i++) assert.equal(reader.peek(), undefined);
  assert.equal(reader.hasData, false, "the fragments that arrived were taken out");
});

test("frames written on another thread arrive whole and in order, with the writer blocking on a small ring", async () => {
  const ring = createFrameRing(4096);
  const count = 2000;
  const worker = new Worker(
    `const { register } = await import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))});
     register();
     const { workerData } = await import("node:worker_threads");
     const { FrameRingWriter } = await import(${JSON.stringify(new URL("./frame-ring.ts", import.meta.url).href)});
     const writer = new FrameRingWriter(workerData.ring, () => {});
     for (let seq = 0; seq < workerData.count; seq++) {
       const length = 1 + ((seq * 7919) % 3000);
       const bytes = new Uint8Array(length);
       for (let i = 0; i < length; i++) bytes[i] = (seq * 31 + i * 7) & 0xff;
       writer.send(bytes);
       while (!writer.hasRoom) await new Promise((resolve) => setImmediate(resolve));
     }`,
    { eval: true, workerData: { ring, count } },
  );
  const exited = new Promise<number>((resolve, reject) => {
    worker.on("exit", resolve);
    worker.on("error", reject);
  });
  const reader = new FrameRingReader(ring, () => {});
  let received = 0;
  const deadline = Date.now() + 20_000;
  while (received < count) {
    const got = reader.peek();
    if (got === undefined) {
      assert.ok(Date.now() < deadline, `only ${received} of ${count} frames arrived`);
      await new Promise((resolve) => setImmediate(resolve));
      continue;
    }
    checkFrame(got, received, 1 + ((received * 7919) % 3000));
    reader.release();
    received++;
  }
  assert.equal(await exited, 0);
});

test("halfFull: true from half the ring's bytes written and not released, false again once the reader releases them", () => {
  const ring = createFrameRing(1024);
  const writer = new FrameRingWriter(ring, () => {});
  const reader = new FrameRingReader(ring, () => {});
  // A record is an 8-byte header and the frame padded to 8: frames of 120 bytes take 128.
  for (let i = 0; i < 3; i++) writer.send(frame(i, 120));
  assert.equal(reader.halfFull, false, "384 of 1,024 bytes");
  writer.send(frame(3, 120));
  assert.equal(reader.halfFull, true, "512 of 1,024 bytes");
  checkFrame(reader.peek()!, 0, 120);
  assert.equal(reader.halfFull, true, "a frame peeked at still holds its room");
  reader.release();
  assert.equal(reader.halfFull, false, "384 bytes once one is released");
});
