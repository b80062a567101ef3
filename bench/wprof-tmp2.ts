import { mapKeyOf } from "../packages/eddy/src/core/key.ts";
const maps: Map<unknown, unknown>[] = Array.from({ length: 128 }, () => new Map());
const chans = ["Google", "Facebook", "Baidu", "Apple"];
for (let i = 0; i < 10000; i++) { const k = mapKeyOf([i < 4 ? chans[i]! : `channel-${i}`, 19700]); maps[i & 127]!.set(k, { i }); }
let s = 0; const t0 = performance.now();
for (let r = 0; r < 2_000_000; r++) {
  const i = r % 10 === 0 ? 4 + (r % 9996) : r & 3;
  const k = mapKeyOf([i < 4 ? chans[i]! : `channel-${i}`, 19700]);
  for (let t = 0; t < 4; t++) if (maps[i & 127]!.get(k)) s++;
}
console.log(((performance.now() - t0) * 1e6 / 2e6).toFixed(0), "ns/record", s);
