/**
 * Event-time window throughput, inline (one thread), beside hand-written loops in the same run:
 * a keyed COUNT per window over 1,000 keys, emitted as `{ key, end, count }` into a counting sink,
 * for
 *
 *   1. tumbling 10 s          (each event in 1 window)
 *   2. sliding 10 s / 2 s     (each event in 5 windows)
 *   3. sliding 60 s / 1 s     (each event in 60 windows)
 *   4. sessions, gap 2 s      (10–50 events per key and session)
 *
 * Event time advances 1 ms per event (one event per key per second) with a deterministic disorder
 * of ±49 ms and a bounded-out-of-orderness watermark of 100 ms (bench/jobs/windows.ts). Each
 * loop keeps a Map per window end (or per key, for sessions) and fires windows as soon as the
 * watermark it computes after every event passes their end, as Eddy's default trigger does. Both
 * sides count their output records and fold an order-independent checksum; they must agree, so no
 * variant can skip work.
 *
 *   node -C eddy-source --import tsx bench/windows.ts [events=2000000] [rounds=3] [sliding60Events=events/4] [sessionEvents=events/2]
 *
 * EDDY_BENCH_VARIANTS=sliding (any part of the variant names, comma-separated) runs only the
 * variants whose name contains one of them.
 *
 * The sliding 60 s / 1 s and session cases run on fewer events by default, to keep the default
 * run under ~3 minutes on two cores: sliding 60/1 emits about one window per event (each key
 * fires a window every second) and sessions are the slowest per event in Eddy. Rates are events
 * per second of the whole job (inline: no thread startup), medians of `rounds` runs.
 *
 * The loops for sliding windows keep per-pane partial counts (`paneWindowLoop`), as Eddy's pane
 * operator does (sliding-pane-operator.ts) and a good hand-written program would: that loop is
 * the "loop" column. The straightforward loop, which updates size/slide window counts per event
 * (the general window operator's algorithm), runs too, as the "naive" columns. The "operator"
 * column shows which operator ran. Eddy runs twice per round: as the job is (windows aggregate
 * locally in front of the keyBy, runtime/windows/local-window-aggregation.ts) and with
 * `.localAggregation(false)` ("no-local"); "local gain" is the first's rate over the second's.
 *
 * Every measurement (the loop, the naive loop, Eddy, Eddy without local aggregation) runs in a
 * process of its own, so none inherits another's heap, garbage or compiled code: run one after the
 * other in one process, whichever ran later in a round ran up to 1.5× slower or faster (measured
 * 2026-12-04, docs/benchmarks-history.md). Rounds alternate the order (loops first, then Eddy
 * first), so load drift hits both alike. "cpu l/e" is the same ratio in CPU time (the child
 * process's, user + system, over the measured part: Eddy's run as a whole, the loop), which a
 * machine shared with other work disturbs less than wall time.
 */
import { execFile } from "node:child_process";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { JobDefinition } from "eddy";
import { runJob } from "eddy/testing";
import { FOLD_COLLECT_NAME } from "./folding-sink.ts";
import { mergeFolds, type OutputFold } from "./output-fold.ts";
import { median } from "./stats.ts";

/** What both sides fold their output into: record count and the sum of record hashes mod 2^32. */
interface SinkTally {
  readonly records: number;
  readonly checksum: number;
}

const EVENTS = Number(process.argv[2] ?? 2_000_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const SLIDING60_EVENTS = Number(process.argv[4] ?? Math.floor(EVENTS / 4));
const SESSION_EVENTS = Number(process.argv[5] ?? Math.floor(EVENTS / 2));
const KEYS = Number(process.env.EDDY_BENCH_KEYS ?? 1000);
const ONLY = process.env.EDDY_BENCH_VARIANTS?.split(",").filter((s) => s !== "");
process.env.EDDY_BENCH_KEYS = String(KEYS);

const jobs = await import("./jobs/windows.ts");
const { eventTimeMs, recordHash, sessionSkips, OUT_OF_ORDERNESS_MS, SESSION_GAP_MS } = jobs;


interface LoopResult extends SinkTally {
  /** Events dropped as late (every window already fired); 0 for this workload. */
  readonly late: number;
}

/**
 * Tumbling (slide = size) and sliding windows: per window end, a Map from key to count. A window
 * fires when the watermark (max timestamp - bound - 1, recomputed after every event) reaches its
 * last timestamp, end - 1; an event skips windows that have already fired (late for them).
 */
function fixedWindowLoop(events: number, size: number, slide: number): LoopResult {
  const open = new Map<number, Map<number, number>>();
  let records = 0;
  let checksum = 0;
  let late = 0;
  let maxTs = -Infinity;
  let watermark = -Infinity;
  /** The smallest end - 1 of an open window (Infinity when none): when the next firing is due. */
  let nextFire = Infinity;
  const fire = (upTo: number): void => {
    nextFire = Infinity;
    for (const [end, counts] of open) {
      if (end - 1 <= upTo) {
        for (const [key, n] of counts) {
          records++;
          checksum = (checksum + recordHash(key, end, n)) >>> 0;
        }
        open.delete(end);
      } else if (end - 1 < nextFire) {
        nextFire = end - 1;
      }
    }
  };
  for (let i = 0; i < events; i++) {
    const key = i % KEYS;
    const ts = eventTimeMs(i, KEYS, undefined);
    let assigned = false;
    for (let start = ts - (ts % slide); start > ts - size; start -= slide) {
      const end = start + size;
      if (end - 1 <= watermark) continue;
      assigned = true;
      let counts = open.get(end);
      if (counts === undefined) {
        open.set(end, (counts = new Map()));
        if (end - 1 < nextFire) nextFire = end - 1;
      }
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    if (!assigned) late++;
    if (ts > maxTs) {
      maxTs = ts;
      watermark = maxTs - OUT_OF_ORDERNESS_MS - 1;
      if (watermark >= nextFire) fire(watermark);
    }
  }
  fire(Infinity);
  return { records, checksum, late };
}

/**
 * Sliding windows the way a good hand-written program computes them: per pane (a slice of length
 * `slide`; size is a multiple of it) a Map from key to its partial count, one update per event;
 * a window [end - size, end) fires when the watermark reaches end - 1, summing its size/slide
 * panes per key, and its first pane, which no later window contains, is dropped. Windows fire in
 * end order, each end once; the same output as `fixedWindowLoop` (checked by the checksum).
 */
function paneWindowLoop(events: number, size: number, slide: number): LoopResult {
  const panes = new Map<number, Map<number, number>>();
  let records = 0;
  let checksum = 0;
  let late = 0;
  let maxTs = -Infinity;
  let watermark = -Infinity;
  /** The end of the next window to fire: the first end past the last fired one that holds a pane (Infinity when none). */
  let nextEnd = Infinity;
  let firedEnd = -Infinity;
  const sums = new Map<number, number>();
  const fire = (upTo: number): void => {
    while (nextEnd !== Infinity && nextEnd - 1 <= upTo) {
      const end = nextEnd;
      const start = end - size;
      sums.clear();
      for (let p = start; p < end; p += slide) {
        const counts = panes.get(p);
        if (counts === undefined) continue;
        for (const [key, n] of counts) sums.set(key, (sums.get(key) ?? 0) + n);
      }
      for (const [key, n] of sums) {
        records++;
        checksum = (checksum + recordHash(key, end, n)) >>> 0;
      }
      panes.delete(start);
      firedEnd = end;
      // The next window holding a pane: the next end, or the first window of the oldest pane left.
      let oldest = Infinity;
      for (const p of panes.keys()) if (p < oldest) oldest = p;
      nextEnd = oldest === Infinity ? Infinity : Math.max(end + slide, oldest + slide);
    }
  };
  for (let i = 0; i < events; i++) {
    const key = i % KEYS;
    const ts = eventTimeMs(i, KEYS, undefined);
    const pane = ts - (ts % slide);
    if (pane + size - 1 <= watermark) {
      late++; // every window of the pane has fired
    } else {
      let counts = panes.get(pane);
      if (counts === undefined) panes.set(pane, (counts = new Map()));
      counts.set(key, (counts.get(key) ?? 0) + 1);
      // The pane's first window the watermark has not passed (the earlier ones fired without it).
      let first = pane + slide;
      if (first - 1 <= watermark) first += Math.ceil((watermark + 2 - first) / slide) * slide;
      first = Math.max(first, firedEnd + slide);
      if (first < nextEnd) nextEnd = first;
    }
    if (ts > maxTs) {
      maxTs = ts;
      watermark = maxTs - OUT_OF_ORDERNESS_MS - 1;
      if (watermark >= nextEnd - 1) fire(watermark);
    }
  }
  fire(Infinity);
  return { records, checksum, late };
}

interface Session {
  start: number;
  end: number;
  count: number;
}

/**
 * Session windows: per key, the open sessions (at most a few). An event's window [ts, ts + gap)
 * merges with every open session it intersects (touching counts, as TimeWindow.intersects);
 * open sessions never intersect each other, so checking each against the event's own window is
 * the same as Flink's sort-and-sweep. Sessions fire when the watermark reaches end - 1.
 */
function sessionLoop(events: number, gap: number): LoopResult {
  const skips = sessionSkips(events, KEYS);
  const open = new Map<number, Session[]>();
  let records = 0;
  let checksum = 0;
  let late = 0;
  let maxTs = -Infinity;
  let watermark = -Infinity;
  /** A lower bound of the smallest end - 1 of an open session (sessions only grow). */
  let nextFire = Infinity;
  const fire = (upTo: number): void => {
    nextFire = Infinity;
    for (const [key, sessions] of open) {
      for (let j = 0; j < sessions.length; j++) {
        const s = sessions[j]!;
        if (s.end - 1 <= upTo) {
          records++;
          checksum = (checksum + recordHash(key, s.end, s.count)) >>> 0;
          sessions[j--] = sessions[sessions.length - 1]!;
          sessions.pop();
        } else if (s.end - 1 < nextFire) {
          nextFire = s.end - 1;
        }
      }
    }
  };
  for (let i = 0; i < events; i++) {
    const key = i % KEYS;
    const ts = eventTimeMs(i, KEYS, skips);
    const windowEnd = ts + gap;
    let sessions = open.get(key);
    if (sessions === undefined) open.set(key, (sessions = []));
    let target: Session | undefined;
    for (let j = 0; j < sessions.length; j++) {
      const s = sessions[j]!;
      if (!(s.start <= windowEnd && s.end >= ts)) continue;
      if (target === undefined) {
        target = s;
        s.start = Math.min(s.start, ts);
        s.end = Math.max(s.end, windowEnd);
        s.count++;
      } else {
        // The event bridges two sessions: fold s into the first one.
        target.start = Math.min(target.start, s.start);
        target.end = Math.max(target.end, s.end);
        target.count += s.count;
        sessions[j--] = sessions[sessions.length - 1]!;
        sessions.pop();
      }
    }
    if (target === undefined) {
      if (windowEnd - 1 <= watermark) {
        late++;
      } else {
        sessions.push({ start: ts, end: windowEnd, count: 1 });
        if (windowEnd - 1 < nextFire) nextFire = windowEnd - 1;
      }
    }
    if (ts > maxTs) {
      maxTs = ts;
      watermark = maxTs - OUT_OF_ORDERNESS_MS - 1;
      if (watermark >= nextFire) fire(watermark);
    }
  }
  fire(Infinity);
  return { records, checksum, late };
}

/** CPU ms of the whole process (user + system) since `start`. */
function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

interface EddyResult extends SinkTally {
  readonly ms: number;
  readonly lateDropped: number;
  /** The window operator's name as the runtime reports it (shows which operator ran). */
  readonly operator: string;
}

async function runEddy(job: JobDefinition, events: number, localAggregation: boolean): Promise<EddyResult> {
  process.env.EDDY_BENCH_EVENTS = String(events);
  process.env.EDDY_BENCH_WINDOWS_LOCAL = localAggregation ? "on" : "off";
  const handle = runJob(job, { mode: "inline", parallelism: 1 });
  const result = await handle.done;
  const fold = mergeFolds(handle.collected<OutputFold>(FOLD_COLLECT_NAME));
  const records = fold.count;
  const checksum = fold.checksum >>> 0;
  let lateDropped = 0;
  let operator = "?";
  for (const m of result.metrics) {
    const name = /Window(All)?\(.*\)/.exec(m.task)?.[0];
    if (name !== undefined) operator = name;
    for (const [counter, value] of Object.entries(m.counters)) if (counter.endsWith("numLateRecordsDropped")) lateDropped += value;
  }
  if (result.sourceRecords !== events) throw new Error(`${job.name}: the source read ${result.sourceRecords} events, expected ${events}`);
  return { records, checksum, ms: result.runningMs, lateDropped, operator };
}

interface Variant {
  readonly name: string;
  readonly job: JobDefinition;
  readonly events: number;
  readonly loop: (events: number) => LoopResult;
  /** Sliding windows: the straightforward loop (size/slide counts per event), an extra reference. */
  readonly naive?: (events: number) => LoopResult;
}

const allVariants: Variant[] = [
  { name: "tumbling 10 s", job: jobs.tumbling10s, events: EVENTS, loop: (n) => fixedWindowLoop(n, 10_000, 10_000) },
  { name: "sliding 10 s / 2 s", job: jobs.sliding10s2s, events: EVENTS, loop: (n) => paneWindowLoop(n, 10_000, 2_000), naive: (n) => fixedWindowLoop(n, 10_000, 2_000) },
  { name: "sliding 60 s / 1 s", job: jobs.sliding60s1s, events: SLIDING60_EVENTS, loop: (n) => paneWindowLoop(n, 60_000, 1_000), naive: (n) => fixedWindowLoop(n, 60_000, 1_000) },
  { name: `sessions (gap ${SESSION_GAP_MS / 1000} s)`, job: jobs.sessions, events: SESSION_EVENTS, loop: (n) => sessionLoop(n, SESSION_GAP_MS) },
];
const variants = ONLY === undefined ? allVariants : allVariants.filter((v) => ONLY.some((part) => v.name.includes(part)));
if (variants.length === 0) throw new Error(`EDDY_BENCH_VARIANTS=${process.env.EDDY_BENCH_VARIANTS}: no variant's name contains it`);

/** What one child process measured: one run of a loop or of Eddy. */
interface Measurement extends SinkTally {
  readonly ms: number;
  readonly cpuMs: number;
  /** Late events: the loop's count of skipped window updates, or Eddy's dropped records. */
  readonly late: number;
  readonly operator?: string;
}

type Which = "loop" | "naive" | "eddy" | "no-local";

/** Runs one measurement in this process (the child's side). */
async function measureHere(v: Variant, which: Which): Promise<Measurement> {
  const cpu = process.cpuUsage();
  if (which === "loop" || which === "naive") {
    const started = performance.now();
    const r = (which === "loop" ? v.loop : v.naive!)(v.events);
    return { ms: performance.now() - started, cpuMs: cpuMsSince(cpu), records: r.records, checksum: r.checksum, late: r.late };
  }
  const r = await runEddy(v.job, v.events, which === "eddy");
  return { ms: r.ms, cpuMs: cpuMsSince(cpu), records: r.records, checksum: r.checksum, late: r.lateDropped, operator: r.operator };
}

/** Set in a child: "<variant index>:<which>". */
const CHILD_ENV = "EDDY_BENCH_WINDOWS_CHILD";
const execFileAsync = promisify(execFile);

/** Runs one measurement in a fresh process with this one's flags and arguments. */
async function measureInChild(index: number, which: Which): Promise<Measurement> {
  const { stdout } = await execFileAsync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    env: { ...process.env, [CHILD_ENV]: `${index}:${which}` },
    maxBuffer: 1024 * 1024,
  });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as Measurement;
}

const child = process.env[CHILD_ENV];
if (child !== undefined) {
  const [index, which] = child.split(":") as [string, Which];
  process.stdout.write(`${JSON.stringify(await measureHere(allVariants[Number(index)]!, which))}\n`);
  process.exit(0);
}

console.log(
  `Eddy window bench: ${EVENTS.toLocaleString("en")} events (fewer, to bound the run time: sliding 60 s / 1 s ` +
    `${SLIDING60_EVENTS.toLocaleString("en")}, sessions ${SESSION_EVENTS.toLocaleString("en")}), ` +
    `${KEYS} keys, 1 ms of event time per event, disorder ±49 ms, watermark bound ${OUT_OF_ORDERNESS_MS} ms; ` +
    `inline, parallelism 1; ${availableParallelism()} cores; median of ${ROUNDS}; every measurement in a process of its own, rounds alternating loops-first and Eddy-first\n`,
);
const header = `${"variant".padEnd(22)} ${"events".padStart(11)} ${"windows out".padStart(11)} ${"eddy ev/s".padStart(11)} ${"loop ev/s".padStart(11)} ${"loop/eddy".padStart(9)} ${"cpu l/e".padStart(7)} ${"naive ev/s".padStart(11)} ${"naive/eddy".padStart(10)} ${"no-local".padStart(11)} ${"local gain".padStart(10)}  operator`;
const rows: string[] = [];
for (const v of variants) {
  const eddyMs: number[] = [];
  const noLocalMs: number[] = [];
  const loopMs: number[] = [];
  const eddyCpuMs: number[] = [];
  const loopCpuMs: number[] = [];
  const naiveMs: number[] = [];
  let outputs = 0;
  let operator = "?";
  const index = allVariants.indexOf(v);
  for (let round = 0; round < ROUNDS; round++) {
    const loops: Which[] = v.naive === undefined ? ["loop"] : ["loop", "naive"];
    const order: Which[] = round % 2 === 0 ? [...loops, "eddy", "no-local"] : ["eddy", "no-local", ...loops];
    const got = new Map<Which, Measurement>();
    for (const which of order) got.set(which, await measureInChild(index, which));
    const expected = got.get("loop")!;
    loopMs.push(expected.ms);
    loopCpuMs.push(expected.cpuMs);
    const naive = got.get("naive");
    if (naive !== undefined) {
      naiveMs.push(naive.ms);
      if (naive.records !== expected.records || naive.checksum !== expected.checksum) throw new Error(`${v.name}: the naive loop and the pane loop disagree`);
    }
    const eddy = got.get("eddy")!;
    const withoutLocal = got.get("no-local")!;
    eddyMs.push(eddy.ms);
    eddyCpuMs.push(eddy.cpuMs);
    noLocalMs.push(withoutLocal.ms);
    for (const [what, run] of [["eddy", eddy], ["eddy without local aggregation", withoutLocal]] as const) {
      if (expected.late !== 0 || run.late !== 0) throw new Error(`${v.name}: late events (loop ${expected.late}, ${what} ${run.late}); the workload should have none`);
      if (run.records !== expected.records || run.checksum !== expected.checksum) {
        throw new Error(
          `${v.name}: ${what} emitted ${run.records} windows (checksum ${run.checksum}), the loop ${expected.records} (checksum ${expected.checksum})`,
        );
      }
    }
    outputs = eddy.records;
    operator = eddy.operator ?? "?";
  }
  const eddyRate = (v.events * 1000) / median(eddyMs);
  const loopRate = (v.events * 1000) / median(loopMs);
  const fmt = (rate: number): string => `${(rate / 1e6).toFixed(3)} M`;
  const naiveRate = naiveMs.length === 0 ? Number.NaN : (v.events * 1000) / median(naiveMs);
  const naiveCols = naiveMs.length === 0 ? `${"".padStart(11)} ${"".padStart(10)}` : `${fmt(naiveRate).padStart(11)} ${(naiveRate / eddyRate).toFixed(1).padStart(9)}×`;
  const noLocalRate = (v.events * 1000) / median(noLocalMs);
  const row = `${v.name.padEnd(22)} ${v.events.toLocaleString("en").padStart(11)} ${outputs.toLocaleString("en").padStart(11)} ${fmt(eddyRate).padStart(11)} ${fmt(loopRate).padStart(11)} ${(loopRate / eddyRate).toFixed(1).padStart(8)}× ${(median(eddyCpuMs) / median(loopCpuMs)).toFixed(1).padStart(6)}× ${naiveCols} ${fmt(noLocalRate).padStart(11)} ${(eddyRate / noLocalRate).toFixed(2).padStart(9)}×  ${operator}`;
  rows.push(row);
  console.error(`  done: ${row.trim()}`); // progress, in case a later variant is slow
}
console.log(header);
for (const row of rows) console.log(row);
console.log("\nChecksums and record counts of Eddy and the loops agree for every variant and round; no event was late.");
