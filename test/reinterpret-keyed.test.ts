/**
 * reinterpretAsKeyedStream (issue 31 follow-up): a stream already partitioned by a key is used as
 * keyed without a shuffle, and input that is not partitioned fails with KEY_NOT_IN_SUBTASK naming
 * the key and the subtasks instead of touching state of key groups the subtask does not own.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { defineJob, EddyError, reinterpretAsKeyedStream } from "eddy";
import { collectSink, runJob } from "eddy/testing";
import { assignToKeyGroup, computeOperatorIndexForKeyGroup } from "../packages/eddy/src/internal.ts";
import * as jobs from "./jobs/reinterpret.ts";

const expectedSums = (): Map<number, number> => {
  const m = new Map<number, number>();
  for (let n = 0; n < jobs.RECORDS; n++) m.set(n % jobs.KEYS, (m.get(n % jobs.KEYS) ?? 0) + (n % 5));
  return m;
};

const finalByKey = (xs: readonly { key: number; value: number }[]): Map<number, number> => {
  const m = new Map<number, number>();
  for (const x of xs) m.set(x.key, Math.max(m.get(x.key) ?? 0, x.value));
  return m;
};

for (const mode of ["inline", "threads"] as const) {
  test(`${mode}, parallelism 2: a stream partitioned by keyBy and mapped is keyed again without a shuffle; every key stays on its owner`, async () => {
    const handle = runJob(jobs.partitioned, { parallelism: 2, mode });
    await handle.done;
    const processed = handle.collected<jobs.Summed>("process");
    const rolling = handle.collected<{ key: number; value: number }>("rolling");
    assert.equal(processed.length, jobs.RECORDS);
    assert.equal(rolling.length, jobs.RECORDS);
    assert.deepEqual(finalByKey(processed), expectedSums());
    assert.deepEqual(finalByKey(rolling), expectedSums());
    for (const r of processed) assert.equal(r.subtask, computeOperatorIndexForKeyGroup(128, 2, assignToKeyGroup(r.key, 128)), `key ${r.key}`);
  });

  test(`${mode}, parallelism 2: input not partitioned by the key fails with KEY_NOT_IN_SUBTASK naming the key, its key group and both subtasks`, async () => {
    for (const job of [jobs.notPartitioned, jobs.notPartitionedRolling]) {
      const handle = runJob(job, { parallelism: 2, mode, restartStrategy: { type: "none" } });
      await assert.rejects(handle.done, (e: unknown) => {
        assert.ok(e instanceof EddyError, String(e));
        assert.equal(e.code, "KEY_NOT_IN_SUBTASK", e.message);
        const m = /subtask (\d) got a record with key (\d+) of key group (\d+), which subtask (\d) owns/.exec(e.message);
        assert.ok(m !== null, e.message);
        const [, subtask, key, keyGroup, owner] = m.map(Number) as [number, number, number, number, number];
        assert.equal(keyGroup, assignToKeyGroup(key, 128));
        assert.equal(owner, computeOperatorIndexForKeyGroup(128, 2, keyGroup));
        assert.notEqual(owner, subtask);
        return true;
      });
    }
  });
}

test("the keyed operator after reinterpretAsKeyedStream must have the stream's parallelism (a forward edge)", async () => {
  const job = defineJob("reinterpret-rescaled", (env) => {
    const mapped = env.fromSequence(0, 9).keyBy((n) => n % 3).map((n) => n);
    reinterpretAsKeyedStream(mapped, (n) => n % 3).sum().setParallelism(3).sinkTo(collectSink("out"));
  });
  await assert.rejects(
    async () => runJob(job, { parallelism: 2, mode: "inline" }).done,
    (e: unknown) => e instanceof EddyError && e.code === "FORWARD_PARALLELISM_MISMATCH",
  );
});
