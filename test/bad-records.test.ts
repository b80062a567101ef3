/**
 * Input a source cannot read (ReaderOutput.reportBadRecord): under the default error policy the
 * job fails with BAD_RECORD, naming the source, the subtask and the position the reader gave.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { defineJob, EddyError, staticSplitEnumerator, WatermarkStrategy, type Source } from "eddy";
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
