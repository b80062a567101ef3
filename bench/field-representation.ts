/**
 * What a numeric field that starts as a small integer and later holds other numbers costs on
 * Node 20 (V8 11.3), for plain code and for an Eddy job (docs/performance.md §4).
 *
 * Records `{ key, value }` are built by one object literal; a rolling sum per key builds results
 * with the same keys, and its sums outgrow V8's small-integer range (±2^30) mid-run. From then on,
 * V8 keeps building objects with the literal's old, deprecated hidden class and converts each one
 * at its first use. Variants, each in a fresh process (the effect is process-wide):
 *
 *   loop, literal              a hand-written loop over the literal records
 *   loop, shape primed         the same, after one `{ key: 0, value: 0.5 }` at module load
 *   loop, constructor          records built by a constructor function (prototype Object.prototype)
 *   eddy job, literal          bench/chained-path.ts's job (source → map → filter → keyBy → reduce →
 *                              sink), inline, the process's first job
 *   eddy job, shape primed     the same job after the priming literal
 *
 *   node -C eddy-source --import tsx bench/field-representation.ts [records=6000000] [processes=3]
 *
 * Reports, per variant, ns per record (whole run) of each process and their median, and the median
 * number of objects V8 converted (`--trace-migration` lines counted in a separate run of each process
 * kind, so tracing does not distort the times).
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Sink } from "eddy";
import { runJob } from "eddy/testing";
import { CHAINED_PATH_KEYS as KEYS, chainedPathJob, keepChainedPathRecord as keep, type ChainedPathRecord as Rec } from "./jobs/chained-path.ts";
import { median } from "./stats.ts";

const N = Number(process.argv[2] ?? 6_000_000);
const PROCESSES = Number(process.argv[3] ?? 3);

type Variant = "loop-literal" | "loop-primed" | "loop-constructor" | "eddy-literal" | "eddy-primed";
const LABELS: Record<Variant, string> = {
  "loop-literal": "loop, literal",
  "loop-primed": "loop, shape primed",
  "loop-constructor": "loop, constructor",
  "eddy-literal": "eddy job, literal",
  "eddy-primed": "eddy job, shape primed",
};

async function child(variant: Variant, records: number): Promise<void> {
  // The priming literal: same keys, same order, a fraction in the field that will hold one.
  const primer: Rec | undefined = variant.endsWith("primed") ? { key: 0, value: 0.5 } : undefined;
  function Constructed(this: Rec, key: number, value: number): void {
    this.key = key;
    this.value = value;
  }
  Constructed.prototype = Object.prototype;
  const C = Constructed as unknown as new (key: number, value: number) => Rec;
  // Two literal sites, as a map function and a reduce function of a job would have.
  const toRecord = variant === "loop-constructor" ? (n: number): Rec => new C(n % KEYS, n) : (n: number): Rec => ({ key: n % KEYS, value: n });
  const combine =
    variant === "loop-constructor"
      ? (a: Rec, b: Rec): Rec => new C(a.key, a.value + b.value)
      : (a: Rec, b: Rec): Rec => ({ key: a.key, value: a.value + b.value });
    let checksum = primer === undefined ? 0 : primer.key;
  const start = performance.now();
  if (variant.startsWith("loop")) {
    const acc = new Map<number, Rec>();
    for (let n = 0; n < records; n++) {
      const r = toRecord(n);
      if (!keep(r)) continue;
      const prev = acc.get(r.key);
      const next = prev === undefined ? r : combine(prev, r);
      acc.set(r.key, next);
      checksum = (checksum + next.value) % 1_000_000_007;
    }
  } else {
    const sink: Sink<Rec> = { createWriter: () => ({ write: (r) => void (checksum = (checksum + r.value) % 1_000_000_007) }) };
    const handle = runJob(chainedPathJob("field-representation", records, toRecord, keep, combine, sink));
    await handle.done;
  }
  const ms = performance.now() - start;
  process.stdout.write(JSON.stringify({ nsPerRecord: (ms * 1e6) / records, checksum }) + "\n");
}

function run(variant: Variant, trace: boolean): { nsPerRecord: number; checksum: number; migrations: number } {
  const args = [...(trace ? ["--trace-migration"] : []), "--import", "tsx", fileURLToPath(import.meta.url), "--child", variant, String(N)];
  const r = spawnSync(process.execPath, args, { encoding: "utf8", maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`${variant} failed: ${r.stderr}`);
  // V8's trace lines and ours share stdout, unsynchronized: find our line by its content.
  const json = /\{"nsPerRecord":[^}]*\}/.exec(r.stdout);
  if (json === null) throw new Error(`${variant} printed no result: ${r.stdout.slice(-200)}`);
  const result = JSON.parse(json[0]) as { nsPerRecord: number; checksum: number };
  return { ...result, migrations: r.stdout.split("[migrating]").length - 1 };
}

if (process.argv[2] === "--child") {
  await child(process.argv[3] as Variant, Number(process.argv[4]));
} else {
  const variants = Object.keys(LABELS) as Variant[];
  const times = new Map<Variant, number[]>(variants.map((v) => [v, []]));
  const migrations = new Map<Variant, number[]>(variants.map((v) => [v, []]));
  let expected: number | undefined;
  for (let p = 0; p < PROCESSES; p++) {
    for (const v of variants) {
      const timed = run(v, false);
      expected ??= timed.checksum;
      if (timed.checksum !== expected) throw new Error(`${v} computed ${timed.checksum}, expected ${expected}`);
      times.get(v)!.push(timed.nsPerRecord);
      migrations.get(v)!.push(run(v, true).migrations);
    }
  }
  process.stdout.write(`records: ${N.toLocaleString("en")}, keys: ${KEYS}, processes: ${PROCESSES} (median), Node ${process.version}\n`);
  for (const v of variants) {
    process.stdout.write(
      `${LABELS[v].padEnd(24)} ${median(times.get(v)!).toFixed(1).padStart(8)} ns per record  ` +
        `${median(migrations.get(v)!).toLocaleString("en").padStart(11)} objects converted  ` +
        `(each process: ${times.get(v)!.map((t) => t.toFixed(0)).join(", ")} ns)\n`,
    );
  }
}
