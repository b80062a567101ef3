/** Reading the module conditions of a process (test/conditions.test.ts checks what workers make of them). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { commandLineConditions, processConditions } from "./conditions.ts";

test("the conditions of the command line and of NODE_OPTIONS are read as node reads them", () => {
  assert.deepEqual(commandLineConditions(["-C", "x", "--conditions=y", "--conditions", "z", "--import", "tsx", "-C", "x"]), ["x", "y", "z"]);
  assert.deepEqual(processConditions(["-C", "x"], " --conditions=y  -C x --max-old-space-size=100 --conditions z"), ["x", "y", "z"]);
  assert.deepEqual(processConditions([], ""), []);
});
