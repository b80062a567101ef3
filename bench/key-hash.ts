/**
 * What computing a key's key group costs per record, by kind of key: small integers (cached by
 * KeyGroupAssigner), string ids taken from a pool (as a source that reuses its strings), the same
 * ids built per record (as a parser makes them), non-ASCII strings (an accent at the end, CJK),
 * ASCII and non-ASCII keys in turn, and composite keys.
 *
 *   node -C eddy-source --import tsx bench/key-hash.ts [keysPerRound=2000000] [rounds=5]
 *
 * Reports the median ns per call; the time to build a fresh key is measured on its own and taken
 * off its row.
 */
import { KeyGroupAssigner } from "../packages/eddy/src/core/key-group.ts";
import type { Key } from "../packages/eddy/src/core/key.ts";
import { median } from "./stats.ts";

const N = Number(process.argv[2] ?? 2_000_000);
const ROUNDS = Number(process.argv[3] ?? 5);
const DISTINCT = 1000;

const ids = Array.from({ length: DISTINCT }, (_, i) => `account-${i}`);
const accented = Array.from({ length: DISTINCT }, (_, i) => `compte-${i}-é`);
const cjk = Array.from({ length: DISTINCT }, (_, i) => `用户${i}号`);
const pairs = Array.from({ length: DISTINCT }, (_, i): Key => [`region-${i % 7}`, i]);

const KINDS: Record<string, (i: number) => Key> = {
  "integer (0..999)": (i) => i % DISTINCT,
  "string id from a pool": (i) => ids[i % DISTINCT]!,
  "string id built per record": (i) => `account-${i % DISTINCT}`,
  "non-ASCII string from a pool": (i) => accented[i % DISTINCT]!,
  "CJK string from a pool": (i) => cjk[i % DISTINCT]!,
  "ASCII and non-ASCII in turn": (i) => ((i & 1) === 0 ? ids : accented)[i % DISTINCT]!,
  "[string, integer] from a pool": (i) => pairs[i % DISTINCT]!,
};

function time(f: () => void): number {
  const t = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - t) / N;
}

const assigner = new KeyGroupAssigner(128);
let sink = 0;
console.log(`key group per key, ${N.toLocaleString("en")} keys per round (${DISTINCT} distinct), median of ${ROUNDS}\n`);
for (const [name, make] of Object.entries(KINDS)) {
  const total: number[] = [];
  const making: number[] = [];
  for (let r = 0; r < ROUNDS + 1; r++) {
    const t = time(() => {
      for (let i = 0; i < N; i++) sink += assigner.keyGroupOf(make(i));
    });
    const m = time(() => {
      for (let i = 0; i < N; i++) sink += typeof make(i) === "string" ? 1 : 0;
    });
    // The first round warms up.
    if (r > 0) {
      total.push(t);
      making.push(m);
    }
  }
  console.log(`  ${name.padEnd(32)} ${(median(total) - median(making)).toFixed(1).padStart(6)} ns`);
}
// Printed so that no loop's results can be dropped as unused.
console.log(`\n  (checksum ${sink})`);
