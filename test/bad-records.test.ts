/**
 * Input a source cannot read (ReaderOutput.reportBadRecord): under the default error policy the
 * job fails with BAD_RECORD, naming the source, the subtask and the position the reader gave;
 * under `skip` and `dead-letter` (set with onError on the stream fromSource returns) the reader
 * goes on, and the bad input is counted or sent to deadLetters() with its position.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { defineJob, EddyError, staticSplitEnumerator, WatermarkStrategy, type DeadLetter, type ErrorPolicy, type ErrorPolicyOptions, type Sink, type Source } from "eddy";
import { collectSink, runJob } from "eddy/testing";

/** Lines of one split; a line that is not an integer is reported as a bad record, with its line number. */
function integerLines(lines: readonly string[]): Source<number, readonly string[]> {
  return {
    boundedness: "bounded",
    createEnumerator: (context) => staticSplitEnumerator(context, [lines]),
    createReader: () => {
      const pending: string[] = [];
      let line = 0;
      let noMore = false;
      return {
        pollNext(output) {
          const text = pending.shift();
          if (text === undefined) return noMore ? "end" : "nothing";
          line++;
          const value = Number(text);
          if (Number.isInteger(value)) output.collect(value);
          else output.reportBadRecord({ raw: text, error: new SyntaxError(`'${text}' is not an integer`), position: { file: "numbers.txt", line } });
          return "more";
        },
        isAvailable: () => Promise.resolve(),
        addSplits: (splits) => void pending.push(...splits.flat()),
        notifyNoMoreSplits: () => void (noMore = true),
        snapshotState: () => [pending.slice()],
      };
    },
  };
}

function job(lines: readonly string[]) {
  return defineJob("bad-records", (env) => {
    env.fromSource(integerLines(lines), WatermarkStrategy.noWatermarks(), "numbers").sinkTo(collectSink("out"));
  });
}

test("a source's bad record fails the job with BAD_RECORD naming the source, subtask and position", async () => {
  const run = runJob(job(["1", "2", "x3", "4"]), { mode: "inline" });
  await assert.rejects(run.done, (e: unknown) => {
    assert.ok(e instanceof EddyError);
    assert.equal(e.code, "BAD_RECORD");
    assert.equal(e.domain, "user");
    assert.equal(e.operator, "numbers");
    assert.equal(e.subtask, 0);
    assert.match(e.message, /source 'numbers' \(subtask 0\) could not read the record at file 'numbers.txt', line 3: SyntaxError: 'x3' is not an integer/);
    return true;
  });
});

test("a source without bad records is not affected", async () => {
  const run = runJob(job(["1", "2", "3"]), { mode: "inline" });
  await run.done;
  assert.deepEqual(run.collected("out"), [1, 2, 3]);
});

function jobWith(lines: readonly string[], policy: ErrorPolicy, options?: ErrorPolicyOptions) {
  return defineJob("bad-records-policy", (env) => {
    const numbers = env.fromSource(integerLines(lines), WatermarkStrategy.noWatermarks(), "numbers").onError(policy, options);
    numbers.sinkTo(collectSink("out"));
    if (policy === "dead-letter") numbers.deadLetters().sinkTo(collectSink("dead"));
  });
}

test("skip: the reader goes on after a bad record, which is counted in the source's metrics", async () => {
  const run = runJob(jobWith(["1", "x2", "3", "", "5"], "skip"), { mode: "inline" });
  await run.done;
  assert.deepEqual(run.collected("out"), [1, 3, 0, 5]);
  const counters = Object.assign({}, ...run.metrics().map((m) => m.counters)) as Record<string, number>;
  assert.equal(counters["numbers.numRecordsSkipped"], 1);
});

test("dead-letter: bad input goes to deadLetters() with its raw text, position, error and source", async () => {
  const run = runJob(jobWith(["1", "x2", "3", "4y"], "dead-letter"), { mode: "inline" });
  await run.done;
  assert.deepEqual(run.collected("out"), [1, 3]);
  const letter = (line: number, raw: string): DeadLetter => ({
    operator: "numbers",
    subtask: 0,
    error: { code: "BAD_RECORD", message: `source 'numbers' (subtask 0) could not read the record at file 'numbers.txt', line ${line}: SyntaxError: '${raw}' is not an integer` },
    raw,
    rawEncoding: "text",
    position: { file: "numbers.txt", line },
  });
  assert.deepEqual(run.collected<DeadLetter>("dead"), [letter(2, "x2"), letter(4, "4y")]);  const counters = Object.assign({}, ...run.metrics().map((m) => m.counters)) as Record<string, number>;
  assert.equal(counters["numbers.numRecordsDeadLettered"], 2);
});

test("the bound: more bad records within a minute than maxPerMinute fails the job with ERROR_POLICY_BOUND_EXCEEDED", async () => {
  const run = runJob(jobWith(["a", "b", "c", "4"], "skip", { maxPerMinute: 2 }), { mode: "inline" });
  await assert.rejects(run.done, (e: unknown) => {
    assert.ok(e instanceof EddyError);
    assert.equal(e.code, "ERROR_POLICY_BOUND_EXCEEDED");
    assert.equal(e.operator, "numbers");
    assert.match(e.message, /would skip more than 2 records within a minute.*line 3/);
    return true;
  });
});

/** A sink whose "service" refuses odd numbers (reportBadRecord) and collects the rest, later, as a database's answer comes. */
function evenOnlySink(): Sink<number> {
  return {
    createWriter: (context) => ({
      write(value) {
        return new Promise<void>((resolve, reject) =>
          setTimeout(() => {
            try {
              if (value % 2 === 1) context.reportBadRecord({ n: value }, new RangeError(`${value} is odd`));
              else context.job.collect("even", value);
              resolve();
            } catch (e) {
              reject(e);
            }
          }, 1),
        );
      },
    }),
  };
}

function sinkJob(policy: ErrorPolicy) {
  return defineJob("bad-records-sink", (env) => {
    const sink = env.fromCollection([2, 3, 4, 5, 6]).sinkTo(evenOnlySink(), "evens").onError(policy);
    if (policy === "dead-letter") sink.deadLetters().sinkTo(collectSink("dead"));
  });
}

test("a sink's refused records: the default policy fails the job naming the sink, skip counts them, dead-letter sends them to the sink's deadLetters()", async () => {
  const failing = runJob(sinkJob("fail"), { mode: "inline" });
  await assert.rejects(failing.done, (e: unknown) => {
    assert.ok(e instanceof EddyError);
    assert.equal(e.operator, "evens");
    assert.match(e.message, /3 is odd/);
    return true;
  });
  const skipping = runJob(sinkJob("skip"), { mode: "inline" });
  await skipping.done;
  assert.deepEqual(skipping.collected("even"), [2, 4, 6]);
  assert.equal((Object.assign({}, ...skipping.metrics().map((m) => m.counters)) as Record<string, number>)["evens.numRecordsSkipped"], 2);
  const lettering = runJob(sinkJob("dead-letter"), { mode: "inline" });
  await lettering.done;
  assert.deepEqual(
    lettering.collected<DeadLetter>("dead").map((d) => [d.operator, d.value, d.error.message]),
    [3, 5].map((n) => ["evens", { n }, `user function failed in operator 'evens' (subtask 0 of 1): RangeError: ${n} is odd`]),
  );
  const noPolicy = defineJob("bad-records-sink-no-policy", (env) => void env.fromCollection([1]).sinkTo(evenOnlySink()).deadLetters());
  await assert.rejects(async () => runJob(noPolicy, { mode: "inline" }).done, /deadLetters\(\) needs a sink whose error policy is "dead-letter"/);
});
