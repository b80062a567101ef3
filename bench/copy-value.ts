/**
 * Micro-benchmark of copyValue (state/copy-value.ts), the copy Eddy makes of every value it keeps
 * in state, beside a spread (`{ ...value }`, the plain-object copy before generated copiers) in
 * the same run:
 *
 *   accumulator   a reduce's accumulator mutated and copied per record (what `sum` does)
 *   two shapes    two record shapes alternating
 *   six shapes    six shapes cycling (more than the copiers tried first)
 *   many shapes   4,096 distinct shapes (objects used as maps)
 *
 *   node -C eddy-source --import tsx bench/copy-value.ts [copies=3000000] [rounds=5]
 *
 * Reports the median ns per copy of `rounds` runs. Every variant folds its copies into a checksum
 * that must agree with the spread's, so no variant can skip work.
 */
import { copyValue } from "../packages/eddy/src/state/copy-value.ts";
import { median } from "./stats.ts";

const N = Number(process.argv[2] ?? 3_000_000);
const ROUNDS = Number(process.argv[3] ?? 5);

type Rec = Record<string, number>;
const spread = (r: Rec): Rec => ({ ...r });
const sumOf = (r: Rec): number => {
  let s = 0;
  for (const k in r) s += r[k]!;
  return s;
};

const sixShapes: Rec[] = Array.from({ length: 6 }, (_, s) => Object.fromEntries(Array.from({ length: 3 }, (_, f) => [`f${s}_${f}`, f + s])));
const manyShapes: Rec[] = Array.from({ length: 4096 }, (_, i) => ({ [`u${i}`]: i, [`v${i % 7}`]: 1 }));
const twoShapes: Rec[] = [{ key: 1, value: 2 }, { id: 3, ts: 5, n: 7 }];

const scenarios: [string, (copy: (r: Rec) => Rec) => number][] = [
  [
    "accumulator",
    (copy) => {
      let acc: Rec = { key: 1, value: 0 };
      let s = 0;
      for (let i = 0; i < N; i++) {
        acc.value! += 1; // the reduce mutates its accumulator, then state keeps a copy
        acc = copy(acc);
        s = (s + acc.value!) % 1_000_000_007;
      }
      return s;
    },
  ],
  ["two shapes", (copy) => fold(copy, twoShapes)],
  ["six shapes", (copy) => fold(copy, sixShapes)],
  ["many shapes", (copy) => fold(copy, manyShapes)],
];

function fold(copy: (r: Rec) => Rec, records: readonly Rec[]): number {
  let s = 0;
  for (let i = 0; i < N; i++) s = (s + sumOf(copy(records[i % records.length]!))) % 1_000_000_007;
  return s;
}


console.log(`copies: ${N.toLocaleString("en")}, rounds: ${ROUNDS} (median ns per copy)`);
for (const [name, run] of scenarios) {
  const times = { copyValue: [] as number[], spread: [] as number[] };
  for (let r = 0; r < ROUNDS; r++) {
    let expected: number | undefined;
    for (const [variant, copy] of [["spread", spread], ["copyValue", copyValue as (r: Rec) => Rec]] as const) {
      const start = process.hrtime.bigint();
      const checksum = run(copy);
      times[variant].push(Number(process.hrtime.bigint() - start) / N);
      expected ??= checksum;
      if (checksum !== expected) throw new Error(`${name}: ${variant} computed ${checksum}, expected ${expected}`);
    }
  }
  console.log(`${name.padEnd(12)} copyValue ${median(times.copyValue).toFixed(1).padStart(7)} ns   spread ${median(times.spread).toFixed(1).padStart(7)} ns`);
}
