/**
 * Calibration of the disk backend's size estimate (`state.backend.disk.cache-bytes`,
 * state/size-estimate.ts): fills a DiskKeyedStateBackend whose cache holds every key with one
 * kind of value, and compares the estimate (`cachedBytes`) with what the heap grew by
 * (`process.memoryUsage().heapUsed` after a full GC). Run with --expose-gc:
 *
 *   node --expose-gc -C eddy-source --import tsx bench/disk-cache-bytes.ts [--keys 200000]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor } from "eddy";
import { ManualClock } from "../packages/eddy/src/core/clock.ts";
import { DiskKeyedStateBackend } from "../packages/eddy/src/state/disk-keyed-state-backend.ts";
import { assignToKeyGroup } from "../packages/eddy/src/core/key-group.ts";
import { DEFAULT_NEXMARK_CONFIG, nexmarkEvent } from "../packages/eddy/src/connector/nexmark/generator.ts";

const { values } = parseArgs({ options: { keys: { type: "string", default: "200000" } } });
const keys = Number(values.keys);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with --expose-gc");
const MAX_PARALLELISM = 128;

interface Case {
  readonly name: string;
  readonly keys: number;
  readonly key: (i: number) => string | number | [number, number];
  readonly write: (b: DiskKeyedStateBackend, i: number) => void;
}

const bid = new ValueStateDescriptor<object>("bid", { copy: "none" });
const count = new ValueStateDescriptor<number>("count");
const list = new ListStateDescriptor<number>("list");
const map = new MapStateDescriptor<string, number>("map");
/** Bid `i` of Nexmark's generator, as q18 keeps it (its channel and URL strings are shared by many bids; the estimate counts them per bid). */
function nexmarkBid(i: number): object {
  let id = i * 50 + 46; // events 46..49 of every 50 are bids
  let e = nexmarkEvent(id, DEFAULT_NEXMARK_CONFIG);
  while (e.bid === undefined) e = nexmarkEvent(++id, DEFAULT_NEXMARK_CONFIG);
  return e.bid;
}
const cases: Case[] = [
  {
    name: "q18 with Nexmark's bids (shared strings)",
    keys,
    key: (i) => [1000 + (i % 5000), i],
    write: (b, i) => b.getState(bid).update(nexmarkBid(i)),
  },
  {
    name: "q18-like bids, every string its own",
    keys,
    key: (i) => [1000 + (i % 5000), i],
    write: (b, i) => b.getState(bid).update({ auction: i, bidder: 1000 + (i % 5000), price: 1234 + i, channel: "Google", url: `https://www.nexmark.com/item.htm?query=1&channel_id=${i % 9999}`, dateTime: 1_700_000_000_000 + i, extra: "x".repeat(20 + (i % 40)) }),
  },
  { name: "a count per number key", keys, key: (i) => i, write: (b, i) => b.getState(count).update(i * 3.5) },
  { name: "a list of 100 numbers per key", keys: keys / 20, key: (i) => `k${i}`, write: (b, i) => { const s = b.getListState(list); for (let j = 0; j < 100; j++) s.add(i + j + 0.5); } },
  { name: "a map of 20 entries per key", keys: keys / 10, key: (i) => `k${i}`, write: (b, i) => { const s = b.getMapState(map); for (let j = 0; j < 20; j++) s.put(`field-${j}`, i + j + 0.5); } },
];

const root = mkdtempSync(join(tmpdir(), "eddy-cache-bytes-"));
console.log(`| case | keys | estimate per key | heap per key | estimate ÷ heap |`);
console.log(`|---|---|---|---|---|`);
const open: DiskKeyedStateBackend[] = [];
try {
  for (const c of cases) {
    gc();
    const before = process.memoryUsage().heapUsed;
    const b = new DiskKeyedStateBackend({ keyGroupRange: { start: 0, end: MAX_PARALLELISM - 1 }, clock: new ManualClock(0), storeDir: join(root, c.name.replace(/\W/g, "_")), cacheSize: 10 * c.keys, cacheBytes: 2 ** 40 });
    for (let i = 0; i < c.keys; i++) {
      const key = c.key(i);
      b.setCurrentKey(key, assignToKeyGroup(key, MAX_PARALLELISM));
      c.write(b, i);
    }
    gc();
    const heap = process.memoryUsage().heapUsed - before;
    const est = b.cachedBytes;
    console.log(`| ${c.name} | ${c.keys.toLocaleString("en")} | ${(est / c.keys).toFixed(0)} B | ${(heap / c.keys).toFixed(0)} B | ${(est / heap).toFixed(2)} |`);
    open.push(b); // disposed at the end: what it holds must not be collected during the next case
  }
} finally {
  for (const b of open) b.dispose();
  rmSync(root, { recursive: true, force: true });
}
