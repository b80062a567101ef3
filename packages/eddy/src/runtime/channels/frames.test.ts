/**
 * Frames: every stream element survives encode → decode exactly (record timestamps bit for bit,
 * NaN and -0 included, whether the frame carries one timestamp for all records or one per record;
 * key groups over the whole range the max parallelism allows), a frame decoded later does not
 * change one decoded earlier, and a frame that is not well formed is refused with CORRUPT_FRAME.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { ByteWriter } from "../../core/codec/bytes.ts";
import { defaultCodec } from "../../core/codec/default-codec.ts";
import { MAX_MAX_PARALLELISM } from "../../core/key-group.ts";
import type { StreamElement } from "../../core/elements.ts";
import { decodeElementFrame, encodeElementFrame, FRAME_HEADER_BYTES, frameSeq } from "./frames.ts";
import { CONTROL_AT_HEAD } from "./channel.ts";

const codec = defaultCodec();

function roundTrip(element: StreamElement, channel = 7): { decoded: StreamElement; frame: Uint8Array } {
  const writer = new ByteWriter(256);
  encodeElementFrame(channel, element, codec, writer);
  // A copy: the writer's buffer is reused by the next encode, as on a real channel.
  const frame = writer.written().slice();
  return { decoded: decodeElementFrame(frame, codec, channel), frame };
}

type RecordsElement = Extract<StreamElement, { kind: "records" }>;

/** Timestamps as the record writer makes them: mostly one value per batch, sometimes mixed. */
const timestampValue = fc.oneof(
  fc.constant(Number.NaN),
  fc.constant(0),
  fc.constant(-0),
  fc.double({ noNaN: true }),
  fc.integer({ min: 0, max: 2 ** 45 }),
);
const timestampsOf = (n: number) =>
  fc.oneof(
    timestampValue.map((t) => new Array<number>(n).fill(t)),
    fc.array(timestampValue, { minLength: n, maxLength: n }),
    // one value with a single different record anywhere (NaN among NaN-free values and back)
    fc.tuple(timestampValue, timestampValue, fc.nat()).map(([a, b, at]) => {
      const out = new Array<number>(n).fill(a);
      if (n > 0) out[at % n] = b;
      return out;
    }),
  );

const recordsElement: fc.Arbitrary<RecordsElement> = fc.integer({ min: 0, max: 300 }).chain((n) =>
  fc.record({
    values: fc.array(fc.record({ key: fc.integer({ min: -5, max: 5000 }), value: fc.oneof(fc.integer(), fc.double()) }), { minLength: n, maxLength: n }),
    timestamps: timestampsOf(n),
    keyGroups: fc.option(fc.array(fc.integer({ min: 0, max: MAX_MAX_PARALLELISM - 1 }), { minLength: n, maxLength: n }), { nil: undefined }),
    seq: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  }).map((r) => ({ kind: "records" as const, ...r })),
);

test("records round-trip exactly: values, timestamps bit for bit (NaN, -0), key groups up to the max parallelism", () => {
  fc.assert(
    fc.property(recordsElement, (element) => {
      const { decoded } = roundTrip(element);
      assert.equal(decoded.kind, "records");
      const d = decoded as RecordsElement;
      assert.deepEqual(d.values, element.values);
      assert.equal(d.timestamps.length, element.timestamps.length);
      for (let i = 0; i < element.timestamps.length; i++) assert.ok(Object.is(d.timestamps[i], element.timestamps[i]), `timestamp ${i}: ${d.timestamps[i]} vs ${element.timestamps[i]}`);
      if (element.keyGroups === undefined) assert.equal(d.keyGroups, undefined);
      else assert.deepEqual(Array.from(d.keyGroups!), element.keyGroups);
      // The batch's place among its sender's pushes, also readable without decoding (StreamTask
      // compares the heads of a join's two inputs this way).
      assert.equal(d.seq, element.seq);
      assert.equal(frameSeq(roundTrip(element).frame), element.seq);
    }),
    { numRuns: 300 },
  );
});

test("a batch whose records share one timestamp carries it once; a mixed batch carries every timestamp", () => {
  const values = Array.from({ length: 1000 }, (_, i) => ({ key: i, value: 1 }));
  const same = roundTrip({ kind: "records", values, timestamps: new Array<number>(1000).fill(Number.NaN), keyGroups: undefined }).frame;
  const mixed = new Array<number>(1000).fill(Number.NaN);
  mixed[999] = 5;
  const differs = roundTrip({ kind: "records", values, timestamps: mixed, keyGroups: undefined }).frame;
  // 1000 timestamps of 8 bytes, less the one that stands for them all
  assert.equal(differs.length - same.length, 999 * 8);
});

test("timestamps decoded from an earlier frame keep their values when later frames carry other ones", () => {
  const values = [{ key: 1, value: 1 }, { key: 2, value: 2 }];
  const first = roundTrip({ kind: "records", values, timestamps: [10, 10], keyGroups: undefined }).decoded as RecordsElement;
  const second = roundTrip({ kind: "records", values, timestamps: [20, 20], keyGroups: undefined }).decoded as RecordsElement;
  const third = roundTrip({ kind: "records", values: Array.from({ length: 5000 }, (_, i) => ({ key: i, value: i })), timestamps: new Array<number>(5000).fill(10), keyGroups: undefined }).decoded as RecordsElement;
  assert.deepEqual(Array.from(first.timestamps), [10, 10]);
  assert.deepEqual(Array.from(second.timestamps), [20, 20]);
  assert.equal(third.timestamps.length, 5000);
  assert.ok(Array.from(third.timestamps).every((t) => t === 10));
});

test("only a records frame has a seq: every other frame reads as a control element, a truncated one as none", () => {
  for (const element of [{ kind: "watermark", timestamp: 5 }, { kind: "status", idle: true }, { kind: "barrier", checkpointId: 3, timestampMs: 9, isSavepoint: false }, { kind: "end" }] as StreamElement[]) {
    assert.equal(frameSeq(roundTrip(element).frame), CONTROL_AT_HEAD, element.kind);
  }
  // A batch no RecordWriter numbered travels as 0.
  const frame = roundTrip({ kind: "records", values: [1], timestamps: [0] }).frame;
  assert.equal(frameSeq(frame), 0);
  assert.equal(frameSeq(frame.subarray(0, FRAME_HEADER_BYTES + 2)), undefined);
  assert.equal(frameSeq(frame.subarray(0, 0)), undefined);
});

test("watermarks, statuses, barriers and end of input round-trip", () => {
  const elements: StreamElement[] = [
    { kind: "watermark", timestamp: 1234.5 },
    { kind: "watermark", timestamp: Number.NEGATIVE_INFINITY },
    { kind: "status", idle: true },
    { kind: "status", idle: false },
    { kind: "barrier", checkpointId: 42, timestampMs: 1_700_000_000_000, isSavepoint: true },
    { kind: "end" },
  ];
  for (const element of elements) assert.deepEqual(roundTrip(element).decoded, element);
});

test("frames that are not well formed are refused with CORRUPT_FRAME", () => {
  const element: RecordsElement = { kind: "records", values: [{ key: 1, value: 2 }], timestamps: [5], keyGroups: [3] };
  const { frame } = roundTrip(element);
  const corrupt = (bytes: Uint8Array, channel = 7) => assert.throws(() => decodeElementFrame(bytes, codec, channel), { code: "CORRUPT_FRAME" });
  corrupt(frame.subarray(0, FRAME_HEADER_BYTES - 1));
  corrupt(frame, 8); // another channel's frame
  const badVersion = frame.slice();
  badVersion[1] = 1;
  corrupt(badVersion);
  const badFlags = frame.slice();
  badFlags[2] = badFlags[2]! | 4;
  corrupt(badFlags);
  const badType = frame.slice();
  badType[0] = 99;
  corrupt(badType);
  // a count larger than the frame holds
  const bigCount = frame.slice();
  new DataView(bigCount.buffer).setUint32(FRAME_HEADER_BYTES, 0xffff_ffff, true);
  corrupt(bigCount);
  for (let cut = FRAME_HEADER_BYTES; cut < frame.length; cut++) corrupt(frame.subarray(0, cut));
});
