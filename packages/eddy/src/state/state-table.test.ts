/**
 * StateTable's copy-on-write of map cells (state-table.ts, unshareCellInto): a capture keeps what
 * a map cell held when the task changes it after the capture — as a FrozenMap for the snapshot
 * writer, which asks for it (`keepFrozen`), and as a Map for every other visitor.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../core/clock.ts";
import { FrozenMap } from "../core/codec/frozen-map.ts";
import type { Key } from "../core/key.ts";
import { KeyContext, StateTable, VOID_NAMESPACE, type TableCapture } from "./state-table.ts";

function mapTable(): { table: StateTable; at: (key: string) => void } {
  const ctx = new KeyContext();
  const table = new StateTable("m", "map", undefined, { start: 0, end: 0 }, ctx, new ManualClock(0));
  const at = (key: string) => {
    ctx.key = key;
    ctx.mapKey = key;
    ctx.keyGroup = 0;
    ctx.kgIndex = 0;
    ctx.row = undefined;
    ctx.epoch++;
  };
  return { table, at };
}

function cells(capture: TableCapture, keepFrozen?: boolean): Map<Key, unknown> {
  const seen = new Map<Key, unknown>();
  capture.forEachCell(0, (key, _ns, value) => seen.set(key, value), undefined, keepFrozen);
  return seen;
}

test("a map cell changed after a capture: the live cell keeps the Map and changes it, the capture keeps its entries as they were", () => {
  const { table, at } = mapTable();
  at("a");
  const map = new Map<number, number>([
    [1, 10],
    [2, 20],
  ]);
  table.cellForWrite(VOID_NAMESPACE, true, map);
  at("b");
  table.cellForWrite(VOID_NAMESPACE, true, new Map([[9, 90]]));
  const first = table.capture();
  at("a");
  const live = table.cellForWrite(VOID_NAMESPACE, true, undefined);
  assert.equal(live.value, map, "handed over to the live cell, not copied");
  map.set(3, 30);
  map.delete(1);
  const second = table.capture();
  at("a");
  (table.cellForWrite(VOID_NAMESPACE, true, undefined).value as Map<number, number>).set(4, 40);

  const frozen = cells(first, true).get("a");
  assert.ok(frozen instanceof FrozenMap, "the snapshot writer gets the frozen entries");
  assert.deepEqual(frozen.keys, [1, 2]);
  assert.deepEqual(frozen.values, [10, 20]);
  assert.deepEqual(cells(first).get("a"), new Map([[1, 10], [2, 20]]), "other visitors get a Map of them");
  assert.deepEqual(cells(second).get("a"), new Map([[2, 20], [3, 30]]), "a later capture: its own moment");
  assert.deepEqual(cells(first).get("b"), new Map([[9, 90]]), "an untouched cell is the Map itself");
  assert.ok(!(cells(first, true).get("b") instanceof FrozenMap));
  assert.deepEqual(map, new Map([[2, 20], [3, 30], [4, 40]]));
  first.release();
  second.release();
});
