import { test } from "node:test";
import assert from "node:assert/strict";
import { gidOf, gidPrefix, parseGid, transactionsToRollBack } from "./prepared-transactions.ts";

const prefix = gidPrefix("Orders Job", "orders", "public.orders");

test("a gid names the job (slug), the sink (hash), the subtask, the barrier and the writer's epoch; parseGid reads back only this sink's", () => {
  assert.match(prefix, /^eddy:orders-job:[0-9a-f]{12}:$/);
  assert.notEqual(prefix, gidPrefix("Orders Job", "orders", "public.other"));
  const gid = gidOf(prefix, 3, 17, "ab12cd34");
  assert.deepEqual(parseGid(prefix, gid), { subtask: 3, seq: 17 });
  assert.equal(parseGid(gidPrefix("other", "orders", "public.orders"), gid), undefined);
  assert.equal(parseGid(prefix, `${prefix}3:17`), undefined);
});

test("on a fresh start a writer rolls back every prepared transaction of its subtask, and no other subtask's or sink's", () => {
  const gids = [gidOf(prefix, 0, 5, "aa"), gidOf(prefix, 1, 5, "aa"), gidOf(prefix, 0, 9, "bb"), "eddy:other:000000000000:0:1:aa", "not-ours"];
  assert.deepEqual(transactionsToRollBack(prefix, gids, 0, undefined), [gids[0], gids[2]]);
});

test("after a restore a writer rolls back, for each subtask whose state it received, the transactions newer than that subtask's barrier; older ones are the committer's", () => {
  const gids = [gidOf(prefix, 0, 4, "aa"), gidOf(prefix, 0, 5, "aa"), gidOf(prefix, 0, 6, "bb"), gidOf(prefix, 1, 6, "aa"), gidOf(prefix, 1, 7, "aa"), gidOf(prefix, 2, 9, "aa")];
  // Rescaled 3 → 1: this writer got the states of old subtasks 0 and 1; subtask 2's went elsewhere.
  const restored = [
    { v: 1 as const, subtask: 0, seq: 5 },
    { v: 1 as const, subtask: 1, seq: 6 },
  ];
  assert.deepEqual(transactionsToRollBack(prefix, gids, 0, restored), [gids[2], gids[4]]);
  assert.deepEqual(transactionsToRollBack(prefix, gids, 0, [{ v: 1, subtask: 0, seq: -1 }]), [gids[0], gids[1], gids[2]]);
});
