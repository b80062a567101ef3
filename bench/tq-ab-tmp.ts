// Timer queue micro-bench: patterns of sessions (distinct timestamps, delete+register per element),
// tumbling windows (1000 keys share each end), per-record timers (distinct, fire in order).
const impl = process.argv[2]!;
const { TimerQueue } = await import(`../packages/eddy/src/runtime/tq-${impl}.ts`);
function sessions(n: number): number {
  const q = new TimerQueue(128);
  const keys = 5000;
  const last = new Float64Array(keys);
  let ts = 1_700_000_000_000;
  let wm = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const k = (i * 7919) % keys;
    ts += 1 + (i % 3);
    if (last[k] !== 0) q.remove(k, k & 127, `${last[k]}`, last[k]);
    last[k] = ts + 10_000;
    q.add(k, k & 127, k & 127, `${last[k]}`, last[k]);
    if ((i & 4095) === 0) { wm = ts - 5000; for (let t = q.peek(); t !== undefined && t.timestamp <= wm; t = q.peek()) { q.poll(); last[t.key] = 0; } }
  }
  return performance.now() - t0;
}
function windows(n: number): number {
  const q = new TimerQueue(128);
  const keys = 1000;
  let ts = 1_700_000_000_000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const k = i % keys;
    ts += 1;
    const end = ts - (ts % 10_000) + 9_999;
    if ((i % 10) === 0) q.add(k, k & 127, k & 127, end - 9_999, end);
    if ((i & 65535) === 0) { const wm = ts - 100; for (let t = q.peek(); t !== undefined && t.timestamp <= wm; t = q.peek()) q.poll(); }
  }
  return performance.now() - t0;
}
function perRecord(n: number): number {
  const q = new TimerQueue(128);
  let ts = 1_700_000_000_000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const k = (i * 31) % 20000;
    ts += 1;
    q.add(k, k & 127, k & 127, "", ts + 1000);
    if ((i & 1023) === 0) { const wm = ts; for (let t = q.peek(); t !== undefined && t.timestamp <= wm; t = q.peek()) q.poll(); }
  }
  return performance.now() - t0;
}
const res: Record<string, number[]> = { sessions: [], windows: [], perRecord: [] };
for (let r = 0; r < 5; r++) { res.sessions!.push(sessions(1_000_000)); res.windows!.push(windows(4_000_000)); res.perRecord!.push(perRecord(1_000_000)); }
const med = (a: number[]) => a.sort((x, y) => x - y)[2]!.toFixed(0);
console.log(impl, "sessions", med(res.sessions!), "ms; windows", med(res.windows!), "ms; perRecord", med(res.perRecord!), "ms");
