/**
 * The source yield's rounds (task-executor.ts, SourceYield): while a task has a backlog, sources
 * sit out at most `rounds` rounds in a row, then one round runs them; without a backlog, or with
 * rounds 0, they never sit out; a round whose backlogged tasks could not run lets the sources run
 * at once.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SourceYield, type YieldingTask } from "./task-executor.ts";

/** Which of `n` rounds the sources sat out ("x") or ran ("."). */
function rounds(y: SourceYield, tasks: readonly YieldingTask[], n: number): string {
  let out = "";
  for (let i = 0; i < n; i++) out += y.startRound(tasks) ? "x" : ".";
  return out;
}

test("with a backlog, sources sit out `rounds` rounds in a row, then run one", () => {
  const backlogged = [{ hasBacklog: false }, { hasBacklog: true }];
  assert.equal(rounds(new SourceYield(3), backlogged, 10), "xxx.xxx.xx");
  assert.equal(rounds(new SourceYield(16), backlogged, 18), `${"x".repeat(16)}.x`);
});

test("without a backlog, or with rounds 0, sources never sit out", () => {
  assert.equal(rounds(new SourceYield(16), [{ hasBacklog: false }, { hasBacklog: false }], 5), ".....");
  assert.equal(rounds(new SourceYield(16), [], 3), "...");
  assert.equal(rounds(new SourceYield(0), [{ hasBacklog: true }], 5), ".....");
});

test("the count starts again once the backlog is gone; endSitOut lets the next round run the sources", () => {
  const task = { hasBacklog: true };
  const y = new SourceYield(4);
  assert.equal(rounds(y, [task], 2), "xx");
  task.hasBacklog = false;
  assert.equal(rounds(y, [task], 1), ".");
  task.hasBacklog = true;
  assert.equal(rounds(y, [task], 4), "xxxx", "a fresh count of 4");
  const z = new SourceYield(4);
  assert.equal(rounds(z, [task], 1), "x");
  z.endSitOut();
  assert.equal(rounds(z, [task], 3), ".xx", "the round after endSitOut runs the sources");
});
