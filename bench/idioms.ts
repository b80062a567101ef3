/**
 * What common ways of writing per-record code cost on this Node (see docs/performance.md), each
 * group measured in the same run beside its cheapest equivalent:
 *
 *   records    building a record from another plus one field: `{ ...r, f }`, a spread copy
 *              then `c.f = …`, `Object.assign({}, r, { f })`, `{ f, ...r }`, overriding a field
 *              the copy already has, a plain `{ ...r }`, an explicit object literal
 *   hot path   reading `process.env` per record against once; `Object.getPrototypeOf(r)`
 *              before against after reading one of r's fields
 *   state      Eddy jobs (inline): a ValueState counter whose descriptor is made once against
 *              per record; an object kept in ValueState, copied (the default) against
 *              `copy: "none"`
 *
 *   node -C eddy-source --import tsx bench/idioms.ts [n=2000000] [rounds=5]
 *
 * Reports the median ns per record of `rounds` runs. The variants of a group fold what they build
 * into a checksum, and the checksums must agree, so no variant can skip work. Run with
 * `node --allow-natives-syntax --import tsx bench/idioms.ts` to also see whether each way of
 * building records gives its results one hidden class.
 */
import { defineJob, ValueStateDescriptor, type KeyedProcessFunction, type Sink } from "eddy";
import { runJob } from "eddy/testing";
import { median } from "./stats.ts";

const N = Number(process.argv[2] ?? 2_000_000);
const ROUNDS = Number(process.argv[3] ?? 5);

interface Bid {
  auction: number;
  bidder: number;
  price: number;
  channel: string;
  url: string;
  dateTime: number;
  extra: string;
}
interface Ranked extends Bid {
  rank: number;
}

const bids: Bid[] = Array.from({ length: 1024 }, (_, i) => ({
  auction: 1000 + i,
  bidder: i,
  price: i * 0.5,
  channel: ["Google", "Facebook", "Baidu", "Apple"][i & 3]!,
  url: `https://www.nexmark.com/item.htm?query=${i}`,
  dateTime: 1.7e12 + i,
  extra: "x".repeat(i % 40),
}));

/** Folds one built record into the checksum (the same for every variant of a group). */
const fold = (s: number, r: Ranked): number => (s + r.rank * 31 + r.bidder) % 1_000_000_007;

// Each variant is its own function, so none shares type feedback with another.
const variants: [string, (b: Bid, rank: number) => Ranked][] = [
  ["{ ...r, rank }", (b, rank) => ({ ...b, rank })],
  ["c = { ...r }; c.rank = …", (b, rank) => {
    const c = { ...b } as Ranked;
    c.rank = rank;
    return c;
  }],
  ["Object.assign({}, r, { rank })", (b, rank) => Object.assign({}, b, { rank })],
  ["{ rank, ...r }", (b, rank) => ({ rank, ...b })],
  ["explicit object literal", (b, rank) => ({ auction: b.auction, bidder: b.bidder, price: b.price, channel: b.channel, url: b.url, dateTime: b.dateTime, extra: b.extra, rank })],
];

function buildLoop(build: (b: Bid, rank: number) => Ranked): number {
  let s = 0;
  for (let i = 0; i < N; i++) s = fold(s, build(bids[i & 1023]!, (i & 7) + 1));
  return s;
}

/** Copies that keep the record's fields: compared among themselves (a different checksum). */
const copies: [string, (b: Bid, price: number) => Bid][] = [
  ["{ ...r, price } (a field r has)", (b, price) => ({ ...b, price })],
  ["{ ...r } then r2.price = …", (b, price) => {
    const c = { ...b };
    c.price = price;
    return c;
  }],
];

function copyLoop(copy: (b: Bid, price: number) => Bid): number {
  let s = 0;
  for (let i = 0; i < N; i++) s = (s + copy(bids[i & 1023]!, i & 7).price + 1) % 1_000_000_007;
  return s;
}

/** `%HaveSameMap` when the process runs with --allow-natives-syntax, else undefined. */
const haveSameMap: ((a: unknown, b: unknown) => boolean) | undefined = (() => {
  try {
    return new Function("a", "b", "return %HaveSameMap(a, b)") as (a: unknown, b: unknown) => boolean;
  } catch {
    return undefined;
  }
})();

function oneHiddenClass(build: (b: Bid, rank: number) => unknown): string {
  if (haveSameMap === undefined) return "";
  return haveSameMap(build(bids[1]!, 1), build(bids[2]!, 2)) ? "one hidden class" : "a hidden class per record";
}

// --- hot path ---

function envPerRecord(): number {
  let s = 0;
  for (let i = 0; i < N; i++) if (process.env.EDDY_BENCH_IDIOMS_UNSET === undefined) s = (s + bids[i & 1023]!.bidder) | 0;
  return s;
}

function envOnce(): number {
  let s = 0;
  const unset = process.env.EDDY_BENCH_IDIOMS_UNSET === undefined;
  for (let i = 0; i < N; i++) if (unset) s = (s + bids[i & 1023]!.bidder) | 0;
  return s;
}

function prototypeFirst(): number {
  let s = 0;
  for (let i = 0; i < N; i++) {
    const r = bids[i & 1023]!;
    if (Object.getPrototypeOf(r) === Object.prototype) s = (s + r.bidder) | 0;
  }
  return s;
}

function fieldFirst(): number {
  let s = 0;
  for (let i = 0; i < N; i++) {
    const r = bids[i & 1023]!;
    const bidder = r.bidder;
    if (Object.getPrototypeOf(r) === Object.prototype) s = (s + bidder) | 0;
  }
  return s;
}

// --- state ---

interface Acc {
  count: number;
  sum: number;
  last: number;
}

const KEYS = 1000;
const hoisted = new ValueStateDescriptor<number>("count");
const copied = new ValueStateDescriptor<Acc>("acc");
const shared = new ValueStateDescriptor<Acc>("acc", { copy: "none" });

type KeyedContext = Parameters<KeyedProcessFunction<number, number, number>["processElement"]>[1];

/** Runs a keyed job over N numbers whose function emits one number per record; returns their sum mod 2^32. */
async function keyedJob(processElement: (n: number, ctx: KeyedContext) => number): Promise<number> {
  let s = 0;
  const sink: Sink<number> = { createWriter: () => ({ write: (v) => void (s = (s + v) | 0) }) };
  await runJob(
    defineJob("bench-idioms", (env) => {
      env
        .fromSequence(0, N - 1)
        .keyBy((n) => n % KEYS)
        .process<number>({ processElement: (n, ctx, out) => out.collect(processElement(n, ctx)) })
        .sinkTo(sink);
    }),
  ).done;
  return s;
}

/** Counts per key in a ValueState<number> whose descriptor `descriptor()` returns. */
const counting =
  (descriptor: () => ValueStateDescriptor<number>) =>
  (_n: number, ctx: KeyedContext): number => {
    const state = ctx.getState(descriptor());
    const c = (state.value() ?? 0) + 1;
    state.update(c);
    return c;
  };

/** Keeps `{ count, sum, last }` per key in a ValueState with `descriptor`. */
const accumulating =
  (descriptor: ValueStateDescriptor<Acc>) =>
  (n: number, ctx: KeyedContext): number => {
    const state = ctx.getState(descriptor);
    const a = state.value();
    const next = { count: (a?.count ?? 0) + 1, sum: (a?.sum ?? 0) + n, last: n };
    state.update(next);
    return next.count;
  };

const stateVariants: [string, string, (n: number, ctx: KeyedContext) => number][] = [
  ["descriptor", "made once", counting(() => hoisted)],
  ["descriptor", "made per record", counting(() => new ValueStateDescriptor<number>("count"))],
  ["object value", "copied (default)", accumulating(copied)],
  ["object value", 'copy: "none"', accumulating(shared)],
];

// --- driver ---

interface Row {
  group: string;
  name: string;
  run: () => number | Promise<number>;
  /** Called after the runs, once V8 has optimized the builders (before, their results may share a class). */
  note?: () => string;
}

const rows: Row[] = [
  ...variants.map(([name, build]): Row => ({ group: "records: r plus a new field", name, run: () => buildLoop(build), note: () => oneHiddenClass(build) })),
  ...copies.map(([name, copy]): Row => ({ group: "records: a copy with a field changed", name, run: () => copyLoop(copy), note: () => oneHiddenClass(copy) })),
  { group: "hot path: configuration", name: "process.env read per record", run: envPerRecord },
  { group: "hot path: configuration", name: "process.env read once", run: envOnce },
  { group: "hot path: plain-object check", name: "getPrototypeOf(r) first", run: prototypeFirst },
  { group: "hot path: plain-object check", name: "a field of r read first", run: fieldFirst },
  ...stateVariants.map(([group, name, fn]): Row => ({ group: `state: ${group}`, name, run: () => keyedJob(fn) })),
];

const times = new Map<Row, number[]>(rows.map((r) => [r, []]));
const expected = new Map<string, number>();
for (let round = 0; round < ROUNDS; round++) {
  for (const row of rows) {
    const start = process.hrtime.bigint();
    const checksum = await row.run();
    const ns = Number(process.hrtime.bigint() - start);
    const want = expected.get(row.group);
    if (want === undefined) expected.set(row.group, checksum);
    else if (checksum !== want) throw new Error(`${row.group} / ${row.name} computed ${checksum}, expected ${want}`);
    times.get(row)!.push(ns / N);
  }
}

process.stdout.write(`${N.toLocaleString("en")} records per run, median of ${ROUNDS}, Node ${process.version}\n`);
let group = "";
for (const row of rows) {
  if (row.group !== group) {
    group = row.group;
    process.stdout.write(`\n${group}\n`);
  }
  const ns = median(times.get(row)!);
  process.stdout.write(`  ${row.name.padEnd(34)} ${ns.toFixed(1).padStart(8)} ns per record  ${row.note?.() ?? ""}\n`);
}
