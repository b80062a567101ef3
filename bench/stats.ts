/** The median of `xs` (the mean of the middle two for an even count; NaN for none). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The geometric mean of `xs` (ratios: speed-ups, rates relative to a baseline); NaN for none. */
export function geomean(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  return Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);
}

/**
 * Runs every variant once per round, in order, timing each; every run's checksum must equal the
 * first run's (so no variant skips work). Returns the times in ms by variant name.
 */
export async function timeVariants(variants: readonly (readonly [string, () => number | Promise<number>])[], rounds: number): Promise<Map<string, number[]>> {
  const times = new Map<string, number[]>(variants.map(([name]) => [name, []]));
  let expected: number | undefined;
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of variants) {
      const start = process.hrtime.bigint();
      const checksum = await run();
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      expected ??= checksum;
      if (checksum !== expected) throw new Error(`${name} computed ${checksum}, expected ${expected}`);
      times.get(name)!.push(ms);
    }
  }
  return times;
}
