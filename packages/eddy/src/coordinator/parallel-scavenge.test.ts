import assert from "node:assert/strict";
import { test } from "node:test";
import { ScavengeSwitch, userDecidesScavenge } from "./parallel-scavenge.ts";

function recording(userDecides = false): { flags: string[]; sw: ScavengeSwitch } {
  const flags: string[] = [];
  return { flags, sw: new ScavengeSwitch((f) => flags.push(f), userDecides) };
}

test("auto: off while a job's workers fill the cores, back on when the last such job ends", () => {
  const { flags, sw } = recording();
  const first = sw.hold("auto", 2, 2);
  assert.deepEqual(flags, ["--no-parallel-scavenge"]);
  const second = sw.hold("auto", 4, 2);
  assert.deepEqual(flags, ["--no-parallel-scavenge"], "switched once, by the first holder");
  assert.equal(sw.holders, 2);
  first();
  first(); // a release counts once
  assert.deepEqual(flags, ["--no-parallel-scavenge"], "still held by the second job");
  second();
  assert.deepEqual(flags, ["--no-parallel-scavenge", "--parallel-scavenge"]);
  assert.equal(sw.holders, 0);
});

test("auto leaves it on for fewer workers than cores; false switches it off for any; true never", () => {
  const { flags, sw } = recording();
  sw.hold("auto", 3, 16)();
  sw.hold("true", 16, 2)();
  assert.deepEqual(flags, []);
  sw.hold("false", 1, 16)();
  assert.deepEqual(flags, ["--no-parallel-scavenge", "--parallel-scavenge"]);
});

test("a process started with a GC flag of its own is left as it was started", () => {
  const { flags, sw } = recording(true);
  sw.hold("false", 2, 2)();
  assert.deepEqual(flags, []);
  assert.equal(userDecidesScavenge(["--no-parallel-scavenge"]), true);
  assert.equal(userDecidesScavenge(["--parallel_scavenge"]), true);
  assert.equal(userDecidesScavenge(["--single-threaded-gc"]), true);
  assert.equal(userDecidesScavenge(["--single-threaded"]), true);
  assert.equal(userDecidesScavenge(["--conditions=eddy-source", "--max-old-space-size=4096", "--import", "tsx"]), false);
});
