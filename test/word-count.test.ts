import assert from "node:assert/strict";
import { test } from "node:test";
import { defineJob, type Collector } from "eddy";
import { collectSink, runJob } from "eddy/testing";
import { prng } from "./fixtures.ts";

const WORDS = ["stream", "state", "time", "window", "key", "flink", "eddy", "node", "barrier", "to", "be"];

function randomLines(n: number, seed: number): string[] {
  const rnd = prng(seed);
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const len = 1 + Math.floor(rnd() * 8);
    const words: string[] = [];
    for (let j = 0; j < len; j++) words.push(WORDS[Math.floor(rnd() * WORDS.length)]!);
    lines.push(words.join(" "));
  }
  return lines;
}

/** The oracle: a plain loop over the same input. */
function countWords(lines: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of lines) for (const w of line.split(" ")) counts.set(w, (counts.get(w) ?? 0) + 1);
  return counts;
}

function wordCountJob(lines: string[], parallelism: number) {
  return defineJob("word-count", (env) => {
    env.setParallelism(parallelism);
    env
      .fromCollection(lines)
      .rebalance()
      .flatMap((line: string, out: Collector<{ word: string; count: number }>) => {
        for (const w of line.split(" ")) out.collect({ word: w, count: 1 });
      })
      .keyBy((r) => r.word)
      .sum("count")
      .uid("counts")
      .sinkTo(collectSink("counts"));
  });
}

for (const parallelism of [1, 4]) {
  test(`word count at parallelism ${parallelism} equals a plain recomputation`, async () => {
    const lines = randomLines(3000, 11 + parallelism);
    const handle = runJob(wordCountJob(lines, parallelism));
    await handle.done;
    const emitted = handle.collected<{ word: string; count: number }>("counts");
    const expected = countWords(lines);
    // Rolling sum: one output per occurrence, and the largest per word is the final count.
    assert.equal(emitted.length, [...expected.values()].reduce((a, b) => a + b, 0));
    const finals = new Map<string, number>();
    for (const r of emitted) finals.set(r.word, Math.max(finals.get(r.word) ?? 0, r.count));
    assert.deepEqual(new Map([...finals].sort()), new Map([...expected].sort()));
    // Per word the emitted counts are exactly 1..n, each once: no record lost or duplicated.
    for (const [word, n] of expected) {
      const counts = emitted.filter((r) => r.word === word).map((r) => r.count);
      assert.deepEqual(counts, Array.from({ length: n }, (_, i) => i + 1), `counts of '${word}'`);
    }
  });
}

test("emitted records are not aliased to the rolling state", async () => {
  const handle = runJob(
    defineJob("alias", (env) => {
      env
        .fromElements({ k: "a", n: 1 }, { k: "a", n: 2 }, { k: "a", n: 3 })
        .keyBy((r) => r.k)
        .reduce((acc, v) => {
          acc.n += v.n; // mutating the accumulator is allowed: it is the operator's private copy
          return acc;
        })
        .map((r) => {
          r.n *= 100; // downstream owns what it receives; this must not leak into the state
          return r;
        })
        .sinkTo(collectSink("out"));
    }),
  );
  await handle.done;
  assert.deepEqual(handle.collected("out"), [
    { k: "a", n: 100 },
    { k: "a", n: 300 },
    { k: "a", n: 600 },
  ]);
});
