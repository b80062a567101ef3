/**
 * NDJSON file source throughput (issue 25): `FileSource.ndjson(dir) → discarding sink`, inline
 * (one thread, parallelism 1), against a hand-written loop over the same files —
 * `readline.createInterface(createReadStream(file))` + `JSON.parse` per line — and the source's
 * reader polled directly, without the job around it (what the source itself costs). Every variant
 * folds the parsed records into a checksum, and the checksums must agree.
 *
 *   node -C eddy-source --import tsx bench/file-source.ts [records=1000000] [rounds=5] [files=4]
 *
 * Records are the Nexmark generator's bids (~210 bytes of JSON). Reports the median of `rounds` runs per
 * variant in records/s and MB/s, and the ratio of each variant's throughput to the loop's
 * (target: the job at least 70 % of the loop).
 */
import { createReadStream, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { defineJob, FileSource, nexmarkConfig, nexmarkEvent, WatermarkStrategy, type Bid, type Sink } from "eddy";
import { readerOutputOf, runJob, sourceReaderContext } from "eddy/testing";
import { median, timeVariants } from "./stats.ts";

const N = Number(process.argv[2] ?? 1_000_000);
const ROUNDS = Number(process.argv[3] ?? 5);
const FILES = Number(process.argv[4] ?? 4);

/** Every bid of the Nexmark generator's first events (~210 bytes of JSON each). */
function bids(n: number): Bid[] {
  const config = nexmarkConfig();
  const out: Bid[] = [];
  for (let id = 0; out.length < n; id++) {
    const bid = nexmarkEvent(id, config).bid;
    if (bid !== undefined) out.push(bid);
  }
  return out;
}
const fold = (sum: number, b: Bid): number => (sum + b.auction * 31 + b.bidder + b.price * 2) % 1_000_000_007;

const dir = mkdtempSync(join(tmpdir(), "eddy-bench-files-"));
const files: string[] = [];
const all = bids(N);
for (let f = 0; f < FILES; f++) {
  const lines = all.slice(Math.floor((N * f) / FILES), Math.floor((N * (f + 1)) / FILES)).map((b) => JSON.stringify(b));
  const path = join(dir, `part-${f}.ndjson`);
  writeFileSync(path, `${lines.join("\n")}\n`);
  files.push(path);
}
const bytes = files.reduce((sum, f) => sum + statSync(f).size, 0);

async function loop(): Promise<number> {
  let checksum = 0;
  for (const file of files) {
    for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
      if (line.length > 0) checksum = fold(checksum, JSON.parse(line) as Bid);
    }
  }
  return checksum;
}

async function job(): Promise<number> {
  let checksum = 0;
  const discard: Sink<Bid> = { createWriter: () => ({ write: (b) => void (checksum = fold(checksum, b)) }) };
  const handle = runJob(
    defineJob("bench-file-source", (env) => {
      env.fromSource(FileSource.ndjson<Bid>(dir), WatermarkStrategy.noWatermarks<Bid>(), "files").sinkTo(discard);
    }),
    { mode: "inline", parallelism: 1 },
  );
  await handle.done;
  return checksum;
}

/** The source's enumerator and one reader, polled in a loop (what the job's source task does, minus the task). */
async function readerAlone(): Promise<number> {
  let checksum = 0;
  const source = FileSource.ndjson<Bid>(dir);
  let noMore = false;
  const pending: Parameters<typeof reader.addSplits>[0][] = [];
  const enumerator = source.createEnumerator({
    parallelism: 1,
    assignSplits: (_i, splits) => void pending.push(splits),
    signalNoMoreSplits: () => void (noMore = true),
    failJob: (e) => {
      throw e;
    },
  });
  const reader = source.createReader(sourceReaderContext({ subtaskIndex: 0, parallelism: 1, sendSplitRequest: () => queueMicrotask(() => enumerator.handleSplitRequest!(0)) }));
  enumerator.start!();
  reader.start!();
  const output = readerOutputOf<Bid>({ collect: (b) => void (checksum = fold(checksum, b)), reportBadRecord: () => {} });
  for (;;) {
    for (const s of pending.splice(0)) reader.addSplits(s);
    if (noMore) reader.notifyNoMoreSplits();
    const status = reader.pollNext(output);
    if (status === "end") break;
    if (status === "nothing") await Promise.race([reader.isAvailable(), new Promise((r) => setImmediate(r))]);
  }
  reader.close!();
  enumerator.close!();
  return checksum;
}

const variants: [string, () => Promise<number>][] = [
  ["readline + JSON.parse loop", loop],
  ["FileSource.ndjson, reader alone", readerAlone],
  ["FileSource.ndjson → sink, inline job", job],
];
const times = await timeVariants(variants, ROUNDS);
rmSync(dir, { recursive: true, force: true });

console.log(`${N} records in ${FILES} files, ${(bytes / 1e6).toFixed(1)} MB, median of ${ROUNDS} rounds`);
const loopMs = median(times.get(variants[0]![0])!);
for (const [name] of variants) {
  const ms = median(times.get(name)!);
  console.log(
    `${name.padEnd(40)} ${ms.toFixed(0).padStart(6)} ms  ${((N / ms) * 1e-3).toFixed(2).padStart(6)} M records/s  ${(bytes / 1e3 / ms).toFixed(0).padStart(4)} MB/s  ${((loopMs / ms) * 100).toFixed(0).padStart(4)} % of the loop`,
  );
}
