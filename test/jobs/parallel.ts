/**
 * Jobs for the parallel-execution tests. They live in their own module, exported at top level,
 * because worker threads rebuild a job by importing its module (docs/design/architecture.md,
 * "A job is a module"); a job defined inside a test file runs inline. Parallelism comes from the
 * run options, so each job runs at any setting.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { getHeapStatistics } from "node:v8";
import { defineJob, MapStateDescriptor, nexmarkSource, recordCodec, ValueStateDescriptor, WatermarkStrategy, type KeyedProcessFunction, type NexmarkEvent, type ProcessFunction, type RuntimeContext } from "eddy";
import { collectSink } from "eddy/testing";

export const RECORDS = 20_000;
export const KEYS = 101;

export interface Tagged {
  readonly key: string;
  readonly n: number;
  readonly subtask: number;
}

/** Emits each record with the subtask that processed it. */
function tagSubtask<T extends { key: string; n: number }>(): KeyedProcessFunction<string, T, Tagged> & { subtask: number } {
  return {
    subtask: -1,
    open(ctx) {
      this.subtask = ctx.subtaskIndex;
    },
    processElement(value, _ctx, out) {
      out.collect({ key: value.key, n: value.n, subtask: this.subtask });
    },
  };
}

/** keyBy routing: every record, tagged with the subtask that received it. */
export const keyedRouting = defineJob("keyed-routing", (env) => {
  env
    .fromSequence(0, RECORDS - 1)
    .map((n) => ({ key: `k${n % KEYS}`, n }))
    .keyBy((r) => r.key)
    .process(tagSubtask())
    .uid("tag")
    .sinkTo(collectSink("out"));
});

/** A rolling sum per key over a keyBy exchange. */
export const keyedSum = defineJob("keyed-sum", (env) => {
  env
    .fromSequence(0, RECORDS - 1)
    .map((n) => ({ key: n % KEYS, value: n % 7, label: `item-${n % 13}` }))
    .keyBy((r) => r.key)
    .sum("value")
    .uid("sum")
    .sinkTo(collectSink("out"));
});

interface FromTo {
  readonly src: number;
  readonly n: number;
  readonly dst: number;
}

function tagSource(): ProcessFunction<number, { src: number; n: number }> & { subtask: number } {
  return {
    subtask: -1,
    open(ctx: RuntimeContext) {
      this.subtask = ctx.subtaskIndex;
    },
    processElement(n, _ctx, out) {
      out.collect({ src: this.subtask, n });
    },
  };
}

function tagDestination(): ProcessFunction<{ src: number; n: number }, FromTo> & { subtask: number } {
  return {
    subtask: -1,
    open(ctx: RuntimeContext) {
      this.subtask = ctx.subtaskIndex;
    },
    processElement(r, _ctx, out) {
      out.collect({ src: r.src, n: r.n, dst: this.subtask });
    },
  };
}

/** rebalance: round-robin from every source subtask to every downstream subtask, in order. */
export const rebalanced = defineJob("rebalanced", (env) => {
  env.fromSequence(0, RECORDS - 1).process(tagSource()).rebalance().process(tagDestination()).sinkTo(collectSink("out"));
});

/** broadcast: every record to every downstream subtask. */
export const broadcasted = defineJob("broadcasted", (env) => {
  env.fromSequence(0, 999).setParallelism(1).process(tagSource()).broadcast().process(tagDestination()).sinkTo(collectSink("out"));
});

export const LARGE_RECORDS = 120;
export const LARGE_RECORD_CHARS = 100_000;

/** A record's payload: its own number spelled out over and over, so a torn or mixed-up frame shows. */
export const largePayload = (n: number): string => `${n}|`.repeat(LARGE_RECORD_CHARS).slice(0, LARGE_RECORD_CHARS);

/** Records far larger than a channel's ring, rebalanced between threads; each checked on arrival. */
export const largeRecords = defineJob("large-records", (env) => {
  env
    .fromSequence(0, LARGE_RECORDS - 1)
    .map((n) => ({ n, payload: largePayload(n) }))
    .rebalance()
    .map((r) => ({ n: r.n, intact: r.payload === largePayload(r.n) }))
    .sinkTo(collectSink("out"));
});

/** union of two sources, then a keyed sum. */
export const unioned = defineJob("unioned", (env) => {
  const a = env.fromSequence(0, 4_999).map((n) => ({ key: n % 13, value: 1 }));
  const b = env.fromCollection(Array.from({ length: 3_000 }, (_, i) => ({ key: i % 17, value: 10 })));
  a.union(b).keyBy((r) => r.key).sum("value").uid("sum").sinkTo(collectSink("out"));
});

/** A record the codec cannot encode (a function) crossing threads. */
export const unencodable = defineJob("unencodable", (env) => {
  env
    .fromSequence(0, 999)
    .map((n) => ({ key: n % 50, n, callback: () => n }))
    .name("make-callbacks")
    .keyBy((r) => r.key)
    .process<number>({ processElement: (r, _ctx, out) => out.collect(r.n) })
    .sinkTo(collectSink("out"));
});

/** User code throws in one subtask. */
export const throwing = defineJob("throwing", (env) => {
  env
    .fromSequence(0, 9_999)
    .map((n) => {
      if (n === 7_777) throw new Error("bad record 7777");
      return { key: n % 10, n };
    })
    .name("fragile-map")
    .keyBy((r) => r.key)
    .sum("n")
    .sinkTo(collectSink("out"));
});

/** User code ends its thread with process.exit. */
export const exiting = defineJob("exiting", (env) => {
  env
    .fromSequence(0, 9_999)
    .map((n) => {
      if (n === 6_000) process.exit(3);
      return { key: n % 10, n };
    })
    .keyBy((r) => r.key)
    .sum("n")
    .sinkTo(collectSink("out"));
});

export const SLOW_RECORDS = 100_000;
export const SLOW_PAYLOAD_BYTES = 4_000;

/** A source that could produce far faster than its slow sink consumes; the sink samples its heap. */
export const slowSink = defineJob("slow-sink", (env) => {
  env
    .fromSequence(0, SLOW_RECORDS - 1)
    .map((n) => ({ key: n % 64, n, payload: "x".repeat(SLOW_PAYLOAD_BYTES) }))
    .keyBy((r) => r.key)
    .process({
      seen: 0,
      processElement(r, _ctx, out) {
        const until = performance.now() + 0.01;
        while (performance.now() < until); // a slow sink: 10 µs per record
        if (++this.seen % 2_000 === 0) out.collect({ seen: this.seen, heap: getHeapStatistics().used_heap_size, bytes: r.payload.length });
      },
    } as KeyedProcessFunction<number, { key: number; n: number; payload: string }, HeapSample> & { seen: number })
    .sinkTo(collectSink("out"));
});

/**
 * A keyed job that would run for hours: what cancelling stops. Its sink keeps nothing, so memory
 * stays flat however long it runs.
 */
export const endless = defineJob("endless", (env) => {
  env
    .fromSequence(0, Number.MAX_SAFE_INTEGER)
    .map((n) => ({ key: n % 64, n }))
    .keyBy((r) => r.key)
    .sum("n")
    .sinkTo({ createWriter: () => ({ write() {} }) });
});

export interface HeapSample {
  readonly seen: number;
  readonly heap: number;
  readonly bytes: number;
}

/** User code that keeps every record: with a small worker heap limit the worker runs out of memory. */
const hoard: unknown[] = [];
export const hoarding = defineJob("hoarding", (env) => {
  env
    .fromSequence(0, 50_000_000)
    .map((n) => {
      hoard.push({ n, pad: new Array(16).fill(n) });
      return { key: n % 10, n };
    })
    .keyBy((r) => r.key)
    .sum("n")
    .sinkTo(collectSink("out"));
});

/** Records through a user-supplied codec (here a JSON one, as an Avro/Protobuf codec would be plugged in). */
export const customCodec = defineJob("custom-codec", (env) => {
  env
    .fromSequence(0, 9_999)
    .map((n) => ({ key: `k${n % 31}`, n, when: n * 1000 }))
    .setCodec(
      recordCodec<{ key: string; n: number; when: number }>({
        id: "test.json/1",
        encode: (value) => new TextEncoder().encode(JSON.stringify({ ...value, codec: "json" })),
        decode: (bytes) => JSON.parse(new TextDecoder().decode(bytes)) as { key: string; n: number; when: number },
      }),
    )
    .keyBy((r) => r.key)
    .process({ processElement: (r, _ctx, out) => out.collect(r) } as KeyedProcessFunction<string, { key: string; n: number; when: number }, unknown>)
    .sinkTo(collectSink("out"));
});

/** Where `closingSlowly` writes its markers: `<dir>/closed-<subtask>`. */
export const CLOSE_MARKER_DIR = "EDDY_TEST_CLOSE_MARKER_DIR";

/**
 * One subtask throws; every subtask's function takes 1.5 s to close (busy: a thread terminated
 * meanwhile stops there, as one inside a native call closing a store would) and then writes a marker: the job's shutdown must let the
 * tasks of the other worker close before it terminates that thread.
 */
export const closingSlowly = defineJob("closing-slowly", (env) => {
  env
    .fromSequence(0, 999_999_999) // the subtask that does not throw is still running when the other fails
    .rebalance()
    .process<number>({
      subtask: -1,
      open(ctx) {
        this.subtask = ctx.subtaskIndex;
      },
      processElement(n, _ctx, out) {
        if (n === 7_777) throw new Error("bad record 7777");
        out.collect(n);
      },
      close() {
        const until = Date.now() + 1_500;
        while (Date.now() < until);
        writeFileSync(join(process.env[CLOSE_MARKER_DIR]!, `closed-${this.subtask}`), "");
      },
    } as ProcessFunction<number, number> & { subtask: number })
    .sinkTo(collectSink("out"));
});

/** Numbers per source subtask range in `buildsThenProbes`: a build every BUILD_EVERY numbers. */
export const BUILD_EVERY = 20;
export const ORDER_RECORDS = 240_000;

/**
 * A join fed by two edges of one source task, like Nexmark's auctions and bids: each number
 * n ≡ 0 (mod BUILD_EVERY) is a build with key n / BUILD_EVERY, every other n a probe of the build
 * written just before it (in the same source subtask: the ranges fromSequence gives each subtask
 * start at multiples of BUILD_EVERY). Emits each probe that reached the join before its build.
 * Builds are sparse and probes dense, as auctions and bids: batched per edge and sent as they
 * filled, a build's batch to the other thread went out long after the probes written after it.
 */
export const buildsThenProbes = defineJob("builds-then-probes", (env) => {
  const numbers = env.fromSequence(0, ORDER_RECORDS - 1);
  const builds = numbers.filter((n) => n % BUILD_EVERY === 0).map((n) => n / BUILD_EVERY);
  const probes = numbers.filter((n) => n % BUILD_EVERY !== 0).map((n) => Math.floor(n / BUILD_EVERY));
  const built = new ValueStateDescriptor<boolean>("built");
  builds
    .connect(probes)
    .keyBy(
      (k) => k,
      (k) => k,
    )
    .process<number>({
      processElement1(_build, ctx) {
        ctx.getState(built).update(true);
      },
      processElement2(probe, ctx, out) {
        if (ctx.getState(built).value() === undefined) out.collect(probe);
      },
    })
    .sinkTo(collectSink("out"));
});

export const HOT_KEY_EVENTS = 600_000;

interface BidOfDay {
  readonly bidder: number;
  readonly auction: number;
  readonly day: number;
}

/**
 * Nexmark's bids keyed by their day (one key: the events span minutes), with distinct bidders and
 * auctions counted per day, like q15: the subtask that owns the day does all the counting, the
 * other only generates. Emits the day's bid count and distinct bidders when the input ends.
 */
export const oneHotKey = defineJob("one-hot-key", (env) => {
  const bidders = new MapStateDescriptor<number, boolean>("bidders");
  const auctions = new MapStateDescriptor<number, boolean>("auctions");
  const count = new ValueStateDescriptor<number>("count");
  env
    .fromSource(nexmarkSource({ events: HOT_KEY_EVENTS }), WatermarkStrategy.forBoundedOutOfOrderness<NexmarkEvent>(4_000), "Source: nexmark")
    .flatMap<BidOfDay>((e, out) => {
      if (e.type === "bid") out.collect({ bidder: e.bid.bidder, auction: e.bid.auction, day: Math.floor(e.bid.dateTime / 86_400_000) });
    })
    .keyBy((b) => b.day)
    .process<[number, number]>({
      processElement(b, ctx) {
        const seen = ctx.getMapState(bidders);
        if (!seen.contains(b.bidder)) seen.put(b.bidder, true);
        const auctionsSeen = ctx.getMapState(auctions);
        if (!auctionsSeen.contains(b.auction)) auctionsSeen.put(b.auction, true);
        const state = ctx.getState(count);
        state.update((state.value() ?? 0) + 1);
        ctx.timerService().registerEventTimeTimer(Number.MAX_SAFE_INTEGER);
      },
      onTimer(_t, ctx, out) {
        out.collect([ctx.getState(count).value() ?? 0, [...ctx.getMapState(bidders).keys()].length]);
      },
    })
    .uid("hot")
    .sinkTo(collectSink("out"));
});
