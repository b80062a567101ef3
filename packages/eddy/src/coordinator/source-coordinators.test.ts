import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_WATERMARK } from "../core/time.ts";
import { WatermarkAlignmentGroups } from "./source-coordinators.ts";

test("watermark alignment: each member may reach its group's minimum plus its own drift; groups are separate", () => {
  const groups = new WatermarkAlignmentGroups();
  assert.equal(groups.report("g", "0/0", 1000, 100), 1100, "alone, it is its own minimum");
  assert.equal(groups.report("g", "0/1", 400, 100), 500);
  assert.equal(groups.report("g", "0/0", 1200, 100), 500, "held to the slower member's 400 + 100");
  assert.equal(groups.report("g", "3/0", 2000, 50), 450, "another source in the group counts too, with its own drift");
  assert.equal(groups.report("other", "5/0", 9000, 0), 9000, "another group does not");
  assert.equal(groups.report("g", "0/1", 700, 100), 800, "the slowest moves: the bound moves");
});

test("watermark alignment: an idle or finished member (MAX_WATERMARK) holds nobody back", () => {
  const groups = new WatermarkAlignmentGroups();
  groups.report("g", "0/0", 100, 10);
  assert.equal(groups.report("g", "0/1", 5000, 10), 110);
  groups.report("g", "0/0", MAX_WATERMARK, 10);
  assert.equal(groups.report("g", "0/1", 5000, 10), 5010);
  assert.equal(groups.report("g", "0/1", MAX_WATERMARK, 10), MAX_WATERMARK, "all done: no bound");
});

test("watermark alignment: a report that is not a watermark is refused", () => {
  const groups = new WatermarkAlignmentGroups();
  assert.throws(() => groups.report("g", "0/0", Number.NaN, 10), /invalid/);
  assert.throws(() => groups.report("g", "0/0", 5, -1), /invalid/);
});
