/** The part lifecycle's decisions over every combination of what the file system can show. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { commitAction, recoverAction, type Observed } from "./part-lifecycle.ts";

const LENGTH = 10;
const observations: Observed[] = [undefined, 0, 5, 10, 15].flatMap((tmpSize) => [false, true].map((targetExists) => ({ tmpSize, targetExists })));

test("commit: renames a complete pending file, recognises a committed one, never overwrites or commits a short file", () => {
  for (const o of observations) {
    const a = commitAction(LENGTH, o);
    const label = JSON.stringify(o);
    if (o.tmpSize === undefined) assert.equal(a.kind, o.targetExists ? "already-committed" : "fail", label);
    else if (o.targetExists) assert.equal(a.kind, "fail", `${label}: a visible file is never replaced`);
    else if (o.tmpSize < LENGTH) assert.equal(a.kind, "fail", label);
    else assert.deepEqual(a, { kind: "rename", truncateTo: o.tmpSize > LENGTH ? LENGTH : undefined }, label);
  }
});

test("recovery: cuts an in-progress file back to its durable length; a missing, short or committed one fails", () => {
  for (const o of observations) {
    const a = recoverAction(LENGTH, o);
    const label = JSON.stringify(o);
    if (o.tmpSize === undefined || o.tmpSize < LENGTH || o.targetExists) {
      assert.equal(a.kind, "fail", label);
      if (o.tmpSize === undefined && o.targetExists) assert.match((a as { reason: string }).reason, /later checkpoint/);
    } else assert.deepEqual(a, { kind: "truncate", length: LENGTH }, label);
  }
});
