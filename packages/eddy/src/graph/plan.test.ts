import assert from "node:assert/strict";
import { test } from "node:test";
import { defineJob } from "../api/define-job.ts";
import { silentLogger } from "../core/logger.ts";
import { planJob } from "../executor/job-ref.ts";

test("tasks are named by their operators' metric names: two chains of same-named operators are two tasks ('Sink: Print', 'Sink: Print (2)')", () => {
  const job = defineJob("same-names", (env) => {
    const numbers = env.fromSequence(1, 10);
    // Unchained from the source (rebalance), each an unnamed map and print of its own.
    numbers.rebalance().map((n) => n + 1).print();
    numbers.rebalance().map((n) => n * 2).print();
  });
  const { plan } = planJob(job, { parallelism: 2 }, silentLogger);
  const names = plan.chains.map((c) => c.name);
  assert.equal(new Set(names).size, names.length, `unique task names: ${names.join(" | ")}`);
  assert.deepEqual(names.slice(1).sort(), ["Map (2) -> Sink: Print (2)", "Map -> Sink: Print"]);
});
