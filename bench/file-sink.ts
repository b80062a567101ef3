/**
 * FileSink NDJSON write throughput (issue 25, "Measured"):
 *
 * - the loop: a hand-written buffered `fs` write loop over the same records (JSON.stringify per
 *   record, lines joined and encoded once per 64 KiB, written with FileHandle.write, one fsync at
 *   the end);
 * - eddy, at-least-once: the same records through a job (collection source → FileSink.ndjson,
 *   inline, parallelism 1) with checkpointing in at-least-once mode every 1 s (barriers, part
 *   lengths recorded, commits at checkpoints);
 * - eddy, exactly-once: the same with exactly-once checkpoints every 1 s;
 * - eddy, no checkpoints: everything committed at the end of input.
 *
 * With one input channel, exactly-once and at-least-once barriers cost the same (nothing to
 * align): the difference between them is noise, and the cost of the sink's exactly-once protocol
 * (fsync of each part at every barrier, the rename commits) shows against "no checkpoints".
 *
 * Run: node -C eddy-source --import tsx bench/file-sink.ts [records=1000000] [rounds=3]
 */
import { mkdtempSync, rmSync, statSync, readdirSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineJob, FileSink } from "eddy";
import { runJob } from "eddy/testing";

const RECORDS = Number(process.argv[2] ?? 1_000_000);
const ROUNDS = Number(process.argv[3] ?? 3);

interface Event {
  readonly id: number;
  readonly user: string;
  readonly amount: number;
  readonly kind: string;
}
const KINDS = ["view", "click", "purchase"];
const events: Event[] = Array.from({ length: RECORDS }, (_, id) => ({ id, user: `user-${id % 1000}`, amount: (id % 9973) / 7, kind: KINDS[id % 3]! }));

async function loop(dir: string): Promise<void> {
  const handle = await open(join(dir, "loop.ndjson"), "w");
  const size = 64 * 1024;
  // Lines gathered as strings and encoded once per 64 KiB (one Buffer#write per line cost about
  // as much as the JSON.stringify): the fastest plain loop we know, as the sink does the same.
  let lines: string[] = [];
  let units = 0;
  let position = 0;
  const write = async (): Promise<void> => {
    const bytes = Buffer.from(lines.join(""), "utf8");
    await handle.write(bytes, 0, bytes.byteLength, position);
    position += bytes.byteLength;
    lines = [];
    units = 0;
  };
  for (let i = 0; i < events.length; i++) {
    const line = JSON.stringify(events[i]) + "\n";
    lines.push(line);
    units += line.length;
    if (units >= size) await write();
  }
  await write();
  await handle.sync();
  await handle.close();
}

const job = (dir: string) =>
  defineJob("bench-file-sink", (env) => {
    env.fromCollection(events).sinkTo(FileSink.ndjson<Event>(dir, { buckets: () => "" }));
  });

type Variant = "loop" | "eddy, no checkpoints" | "eddy, at-least-once 1 s" | "eddy, exactly-once 1 s";
const VARIANTS: Variant[] = ["loop", "eddy, no checkpoints", "eddy, at-least-once 1 s", "eddy, exactly-once 1 s"];

async function runVariant(variant: Variant, dir: string): Promise<void> {
  if (variant === "loop") return loop(dir);
  const checkpointing =
    variant === "eddy, no checkpoints" ? false
    : { intervalMs: 1_000, mode: variant.includes("exactly") ? ("exactly-once" as const) : ("at-least-once" as const) };
  const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
  await runJob(job(join(dir, "out")), { mode: "inline", parallelism: 1, checkpointing, checkpointDir: join(dir, "chk"), logger: quiet }).done;
}

const bytesUnder = (dir: string): number =>
  readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && e.name.endsWith(".ndjson")).reduce((n, e) => n + statSync(join(e.parentPath, e.name)).size, 0);

const results = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
let mb = 0;
for (let round = 0; round < ROUNDS; round++) {
  for (const variant of VARIANTS) {
    const dir = mkdtempSync(join(tmpdir(), "eddy-bench-file-sink-"));
    try {
      const start = performance.now();
      await runVariant(variant, dir);
      const ms = performance.now() - start;
      mb = bytesUnder(dir) / 1e6;
      results.get(variant)!.push(RECORDS / (ms / 1000));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const loopRate = median(results.get("loop")!);
const noCheckpoints = median(results.get("eddy, no checkpoints")!);
console.log(`${RECORDS.toLocaleString("en-US")} records, ${mb.toFixed(1)} MB of NDJSON, median of ${ROUNDS} rounds`);
for (const v of VARIANTS) {
  const rate = median(results.get(v)!);
  console.log(
    `${v.padEnd(26)} ${Math.round(rate).toLocaleString("en-US").padStart(11)} records/s  ${((rate * mb) / RECORDS).toFixed(1).padStart(6)} MB/s  ` +
      `${((100 * rate) / loopRate).toFixed(0).padStart(4)} % of the loop  ${((100 * rate) / noCheckpoints).toFixed(0).padStart(4)} % of no checkpoints`,
  );
}
