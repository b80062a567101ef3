/**
 * Micro-benchmark of the batch codecs that carry records between worker threads: encode + decode
 * on one core (what each side of a thread hop pays together), batches of 1024 records, for three
 * record kinds:
 *
 *   numeric    { key, value }                                        numbers only
 *   bid        { auction, bidder, price, channel, url, dateTime }    Nexmark-like bids
 *   nexmark    the Nexmark generator's bids: the above and `extra`, ~160 bytes encoded
 *   irregular  nested objects, arrays, optional and null fields, varying shapes
 *   mapstate   Maps of 16 int → int entries, as a map state's cells reach a checkpoint (q16's
 *              bidders → price bands); JSON cannot carry a Map, so its row is left out
 *
 * beside baselines measured in the same run: JSON.stringify + JSON.parse (string only, no UTF-8
 * step) and v8.serialize + v8.deserialize (structured clone). Every variant must round-trip a
 * sample batch exactly (deep-equal) before it is timed, and decoded values feed a checksum so no
 * variant can skip work.
 *
 *   node -C eddy-source --import tsx bench/codec.ts [records=500000] [rounds=5] [kinds=numeric,bid,nexmark,irregular,mapstate]
 *
 * Reports the median of `rounds` runs in million records per second and the ratio to JSON.
 */
import { isDeepStrictEqual } from "node:util";
import v8 from "node:v8";
import { ByteReader, ByteWriter } from "../packages/eddy/src/core/codec/bytes.ts";
import type { BatchCodec } from "../packages/eddy/src/core/codec/codec.ts";
import { defaultCodec } from "../packages/eddy/src/core/codec/default-codec.ts";
import { valueCodec } from "../packages/eddy/src/core/codec/value-codec.ts";
import { DEFAULT_NEXMARK_CONFIG, nexmarkEvent } from "../packages/eddy/src/connector/nexmark/generator.ts";
import { median } from "./stats.ts";

const N = Number(process.argv[2] ?? 500_000);
const ROUNDS = Number(process.argv[3] ?? 5);
const ONLY = process.argv[4]?.split(",");
const BATCH = 1024;

const CHANNELS = ["Google", "Facebook", "Baidu", "Apple"];

/** The generator's bids in order (records are made for i = 0, 1, 2, …). */
function nexmarkBids(): (i: number) => unknown {
  let eventId = 0;
  return () => {
    for (;;) {
      const event = nexmarkEvent(eventId++, DEFAULT_NEXMARK_CONFIG);
      if (event.bid !== undefined) return event.bid;
    }
  };
}

const KINDS: Record<string, (i: number) => unknown> = {
  numeric: (i) => ({ key: i % 1000, value: i * 0.5 }),
  bid: (i) => ({
    auction: 1000 + (i % 500),
    bidder: i % 10_000,
    price: (i % 997) * 0.5,
    channel: CHANNELS[i % CHANNELS.length],
    url: `https://www.nexmark.com/item.htm?query=1&channel_id=${i % 256}`,
    dateTime: 1_700_000_000_000 + i,
  }),
  nexmark: nexmarkBids(),
  irregular: (i) => {
    switch (i % 4) {
      case 0:
        return { id: i, user: { name: `user-${i % 100}`, tags: ["a", "b"] }, score: i % 3 === 0 ? null : 1.5 };
      case 1:
        return { id: i, user: { name: `user-${i % 100}`, tags: [] }, score: 2, note: "ok" };
      case 2:
        return { id: i, items: [{ sku: `s${i % 7}`, qty: i % 5 }, { sku: "x", qty: 1 }], paid: i % 2 === 0 };
      default:
        return { type: "ping", at: i, meta: i % 5 === 0 ? undefined : { region: "eu" } };
    }
  },
  mapstate: (i) => new Map(Array.from({ length: 16 }, (_, j) => [i * 7919 + j * 104_729, 1 << (j % 4)])),
};

/** Kinds JSON cannot carry (it writes a Map as {}): no JSON row and no ratio to it. */
const NOT_JSON = new Set(["mapstate"]);

interface Variant {
  readonly name: string;
  /** Encodes and decodes one batch, returning the decoded batch. */
  roundTrip(batch: unknown[]): unknown[];
}

function codecVariant(codec: BatchCodec): Variant {
  const writer = new ByteWriter(64 * 1024);
  return {
    name: codec.id,
    roundTrip(batch) {
      codec.encode(batch, writer);
      const bytes = writer.finish();
      return codec.decode(new ByteReader(bytes), batch.length);
    },
  };
}

const VARIANTS: (() => Variant)[] = [
  () => codecVariant(defaultCodec()),
  () => codecVariant(valueCodec()),
  () => ({ name: "JSON", roundTrip: (batch) => JSON.parse(JSON.stringify(batch)) as unknown[] }),
  () => ({ name: "v8.serialize", roundTrip: (batch) => v8.deserialize(v8.serialize(batch)) as unknown[] }),
];

function makeBatches(make: (i: number) => unknown): unknown[][] {
  const batches: unknown[][] = [];
  for (let start = 0; start < N; start += BATCH) {
    const batch: unknown[] = [];
    for (let i = start; i < Math.min(N, start + BATCH); i++) batch.push(make(i));
    batches.push(batch);
  }
  return batches;
}

/** Records per second of one pass over all batches. */
function run(variant: Variant, batches: unknown[][]): { rate: number; checksum: number } {
  let checksum = 0;
  const t0 = process.hrtime.bigint();
  for (const batch of batches) {
    const decoded = variant.roundTrip(batch);
    checksum = (checksum + decoded.length + (typeof decoded[0] === "object" ? 1 : 0)) % 1_000_000_007;
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return { rate: N / seconds, checksum };
}

const pad = (s: string, n: number): string => s.padEnd(n);

console.log(`codec round trip (encode + decode, one core), ${N} records per round, batches of ${BATCH}, median of ${ROUNDS}\n`);
console.log(`${pad("records", 11)}${pad("codec", 16)}${"M rec/s".padStart(9)}${"× JSON".padStart(9)}`);
for (const [kind, make] of Object.entries(KINDS)) {
  if (ONLY !== undefined && !ONLY.includes(kind)) continue;
  const batches = makeBatches(make);
  const results: { name: string; rate: number }[] = [];
  for (const makeVariant of VARIANTS) {
    const variant = makeVariant();
    if (variant.name === "JSON" && NOT_JSON.has(kind)) continue;
    const sample = batches[0] as unknown[];
    // JSON drops undefined fields, so it is exempt from the exactness check on irregular records.
    if (!isDeepStrictEqual(variant.roundTrip(sample), sample) && variant.name !== "JSON") {
      throw new Error(`${variant.name} does not round-trip ${kind} records`);
    }
    run(variant, batches); // warm-up
    const rates: number[] = [];
    for (let r = 0; r < ROUNDS; r++) rates.push(run(variant, batches).rate);
    results.push({ name: variant.name, rate: median(rates) });
  }
  const json = results.find((r) => r.name === "JSON")?.rate ?? NaN;
  for (const r of results) {
    console.log(`${pad(kind, 11)}${pad(r.name, 16)}${(r.rate / 1e6).toFixed(2).padStart(9)}${(NOT_JSON.has(kind) ? "–" : (r.rate / json).toFixed(1)).padStart(9)}`);
  }
}
