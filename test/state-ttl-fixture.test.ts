/**
 * Keyed state with TTL written before the TTL options of issue 31 (visibility, cleanup) existed
 * still restores, under the old defaults and under the new options; and the current writer still
 * writes those very bytes (the format did not change: snapshots record only ttlMs and updateType).
 * The fixture: test/fixtures/ttl-state/ (generate.ts says how it was made).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor } from "eddy";
import { ManualClock } from "eddy/testing";
import { ByteReader, heapStateBackend, type KeyedStateMeta } from "../packages/eddy/src/internal.ts";
import { ttlKeyGroupFixture, type TtlKeyGroupFixture } from "./fixtures/ttl-state/generate.ts";

const FIXTURE = JSON.parse(readFileSync(join(import.meta.dirname, "fixtures/ttl-state/ttl-keygroup-before-options.json"), "utf8")) as TtlKeyGroupFixture;

function restoreAt(nowMs: number): ReturnType<typeof heapStateBackend> {
  const b = heapStateBackend({ keyGroupRange: { start: 0, end: 127 }, clock: new ManualClock(nowMs) });
  const bytes = Buffer.from(FIXTURE.bytes, "base64");
  b.restoreKeyGroup(FIXTURE.keyGroup, new ByteReader(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)), FIXTURE.states as KeyedStateMeta[]);
  b.setCurrentKey(5, 5);
  return b;
}

test("a TTL snapshot from before the visibility/cleanup options restores with the defaults: per-element expiry kept", () => {
  const b = restoreAt(FIXTURE.takenAt + 50); // "five" and "early" expired at 1100, "late" lives until 1160
  assert.equal(b.getState(new ValueStateDescriptor<string>("v", { ttl: { ttlMs: 100 } })).value(), undefined);
  assert.deepEqual(b.getListState(new ListStateDescriptor<string>("l", { ttl: { ttlMs: 100 } })).get(), ["late"]);
  assert.deepEqual([...b.getMapState(new MapStateDescriptor<string, number>("m", { ttl: { ttlMs: 100, updateType: "onReadAndWrite" } })).entries()], [["late", 2]]);
  const early = restoreAt(FIXTURE.takenAt + 10);
  assert.equal(early.getState(new ValueStateDescriptor<string>("v", { ttl: { ttlMs: 100 } })).value(), "five");
});

test("the same snapshot restores into descriptors with the new options (returnExpiredIfNotCleanedUp, cleanup off)", () => {
  const b = restoreAt(FIXTURE.takenAt + 50);
  const ttl = { ttlMs: 100, visibility: "returnExpiredIfNotCleanedUp", cleanup: { incremental: false, background: false } } as const;
  const v = b.getState(new ValueStateDescriptor<string>("v", { ttl }));
  assert.equal(v.value(), "five", "expired, still stored: returned once");
  assert.equal(v.value(), undefined);
  assert.deepEqual(b.getListState(new ListStateDescriptor<string>("l", { ttl })).get(), ["early", "late"]);
});

test("the current code writes the fixture's metadata, but for the cell format, and bytes that restore to the same state at every time (the TTL format did not change)", async () => {
  const now = await ttlKeyGroupFixture(join(import.meta.dirname, ".."));
  // The cells' codec is eddy.default/3 since 2026-12-05 (lists, then maps column-wise); the fixture's eddy.default/1 still restores.
  const states = (JSON.parse(JSON.stringify(now.states)) as { format: string }[]).map((m) => ({ ...m, format: "eddy.default/1" }));
  assert.deepEqual(states, FIXTURE.states);
  assert.ok((now.states as { format: string }[]).every((m) => m.format === "eddy.default/3"));
  const view = (bytes: string, states: unknown[], nowMs: number) => {
    const b = heapStateBackend({ keyGroupRange: { start: 0, end: 127 }, clock: new ManualClock(nowMs) });
    const raw = Buffer.from(bytes, "base64");
    b.restoreKeyGroup(FIXTURE.keyGroup, new ByteReader(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength)), states as KeyedStateMeta[]);
    b.setCurrentKey(5, 5);
    return [
      b.getState(new ValueStateDescriptor<string>("v", { ttl: { ttlMs: 100 } })).value(),
      b.getListState(new ListStateDescriptor<string>("l", { ttl: { ttlMs: 100 } })).get(),
      [...b.getMapState(new MapStateDescriptor<string, number>("m", { ttl: { ttlMs: 100, updateType: "onReadAndWrite" } })).entries()],
    ];
  };
  for (const after of [0, 50, 99, 150, 1_000]) {
    assert.deepEqual(view(now.bytes, now.states, FIXTURE.takenAt + after), view(FIXTURE.bytes, FIXTURE.states, FIXTURE.takenAt + after), `${after} ms after`);
  }
});
