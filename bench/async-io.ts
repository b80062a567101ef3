/**
 * Async I/O overhead per record (issue 31, "Measured"): the async I/O operator against a
 * hand-written Promise pipeline with the same concurrency, in the same run.
 *
 * - pipeline: a loop over 1..N keeping up to CAPACITY requests in flight in a ring; when the ring
 *   is full it awaits the oldest and folds its results (in order, as orderedWait emits them);
 * - eddy, orderedWait / unorderedWait: `fromSequence(1, N) → AsyncDataStream.*Wait(request,
 *   { capacity: CAPACITY, timeoutMs: Infinity }) → folding sink`, inline, parallelism 1;
 * - eddy, orderedWait + timeout: the same with `timeoutMs: 10_000` (the deadline path);
 * - eddy, map (no I/O): `fromSequence → map → folding sink`, the job around the operator, so
 *   "operator" = (eddy async − eddy map) / N is the operator's own cost per record.
 *
 * The request is the same function in every variant; two kinds: `immediate` resolves at once
 * (a microtask: pure overhead, the worst case for the operator's share), `next-turn` resolves in
 * a later event-loop turn (setImmediate, as an answer from a socket would). Every variant folds
 * its output into a checksum, and the checksums must agree.
 *
 * Run: node -C eddy-source --import tsx bench/async-io.ts [records=500000] [rounds=5]
 */
import { AsyncDataStream, defineJob, type DataStream } from "eddy";
import { runJob } from "eddy/testing";
import { foldingSink, FOLD_COLLECT_NAME } from "./folding-sink.ts";
import { emptyFold, foldDigest, type OutputFold } from "./output-fold.ts";
import { median, timeVariants } from "./stats.ts";

const RECORDS = Number(process.argv[2] ?? 500_000);
const ROUNDS = Number(process.argv[3] ?? 5);
const CAPACITY = 100;

type Request = (n: number) => Promise<number[]>;
const requests: Record<string, Request> = {
  immediate: (n) => Promise.resolve([n * 3 + 1]),
  "next-turn": (n) => new Promise((resolve) => setImmediate(() => resolve([n * 3 + 1]))),
};

const digest = (x: number): number => Math.imul(x, 0x9e3779b1) | 0;

async function pipeline(request: Request, records: number): Promise<number> {
  const fold: OutputFold = emptyFold();
  const ring: (Promise<number[]> | undefined)[] = new Array(CAPACITY);
  let head = 0;
  let inFlight = 0;
  const drainOne = async (): Promise<void> => {
    const results = await ring[head]!;
    ring[head] = undefined;
    head = (head + 1) % CAPACITY;
    inFlight--;
    for (let i = 0; i < results.length; i++) foldDigest(fold, digest(results[i]!));
  };
  for (let n = 1; n <= records; n++) {
    if (inFlight === CAPACITY) await drainOne();
    ring[(head + inFlight) % CAPACITY] = request(n);
    inFlight++;
  }
  while (inFlight > 0) await drainOne();
  return fold.checksum;
}

async function eddy(records: number, body: (numbers: DataStream<number>) => DataStream<number>): Promise<number> {
  const job = defineJob("bench-async-io", (env) => {
    body(env.fromSequence(1, records)).sinkTo(foldingSink<number>(digest));
  });
  const handle = runJob(job, { mode: "inline", parallelism: 1 });
  await handle.done;
  const [fold] = handle.collected(FOLD_COLLECT_NAME) as OutputFold[];
  if (fold?.count !== records) throw new Error(`eddy folded ${fold?.count} records, expected ${records}`);
  return fold.checksum;
}

console.log(`async I/O overhead: ${RECORDS} records, capacity ${CAPACITY}, median of ${ROUNDS} rounds (Node ${process.version}, ${new Date().toISOString()})`);
for (const [kind, request] of Object.entries(requests)) {
  const records = kind === "immediate" ? RECORDS : Math.floor(RECORDS / 2);
  const variants = [
    ["pipeline", () => pipeline(request, records)],
    ["eddy, map (no I/O)", () => eddy(records, (s) => s.map((n) => n * 3 + 1))],
    ["eddy, orderedWait", () => eddy(records, (s) => AsyncDataStream.orderedWait(s, request, { capacity: CAPACITY, timeoutMs: Infinity }))],
    ["eddy, unorderedWait", () => eddy(records, (s) => AsyncDataStream.unorderedWait(s, request, { capacity: CAPACITY, timeoutMs: Infinity }))],
    ["eddy, orderedWait + timeout", () => eddy(records, (s) => AsyncDataStream.orderedWait(s, request, { capacity: CAPACITY, timeoutMs: 10_000 }))],
  ] as const;
  const times = await timeVariants(variants, ROUNDS);
  const med = new Map([...times].map(([name, ts]) => [name, median(ts)]));
  const base = med.get("pipeline")!;
  const map = med.get("eddy, map (no I/O)")!;
  console.log(`\nrequest: ${kind} (${records} records)`);
  console.log("| variant | median ms | ns/record | ratio to pipeline | operator ns/record (− map job) |");
  console.log("|---|---|---|---|---|");
  for (const [name] of variants) {
    const ms = med.get(name)!;
    const operator = name.startsWith("eddy, ") && name !== "eddy, map (no I/O)" ? ((ms - map) * 1e6) / records : Number.NaN;
    console.log(`| ${name} | ${ms.toFixed(0)} | ${((ms * 1e6) / records).toFixed(0)} | ${(ms / base).toFixed(2)}× | ${Number.isNaN(operator) ? "" : operator.toFixed(0)} |`);
  }
}
