import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { userFunctionError } from "./errors.ts";
import { EDDY_PACKAGE_ROOT, failureFields, stackWithCauses, userLocation, userStack, userStacksOnly } from "./user-frames.ts";
import type { LogFields } from "./logger.ts";

const eddy = (file: string): string => join(EDDY_PACKAGE_ROOT, "src", file);

/** A wrapped user failure as a worker reports it: file URLs, an eval frame, Node's and a package's frames. */
const WORKER_STACK = [
  "EddyError: user function failed in operator 'Parse' (subtask 1 of 2): TypeError: x is undefined",
  `    at userFunctionError (${pathToFileURL(eddy("core/errors.ts")).href}:92:10)`,
  `    at Object.collect (eval at compileFunction (${pathToFileURL(eddy("core/codegen.ts")).href}:30:12), <anonymous>:5:65)`,
  "Caused by: TypeError: x is undefined",
  "    at parse (file:///home/ada/my%20jobs/lib/parse.ts:12:7)",
  "    at file:///home/ada/my%20jobs/job.ts:8:21",
  "    at Object.processElement (/home/ada/my jobs/node_modules/left-pad/index.js:3:3)",
  `    at Object.processElement (${eddy("runtime/operators/stateless-operators.ts")}:21:20)`,
  "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
  "    (reported by worker 1)",
].join("\n");

test("the user's frames are those outside Eddy's package, node_modules and Node: the error line and them only", () => {
  assert.equal(
    userStack(WORKER_STACK),
    ["TypeError: x is undefined", "    at parse (file:///home/ada/my%20jobs/lib/parse.ts:12:7)", "    at file:///home/ada/my%20jobs/job.ts:8:21"].join("\n"),
  );
  assert.equal(userLocation(WORKER_STACK), "/home/ada/my jobs/lib/parse.ts:12:7", "the innermost user frame, as a path");
});

test("a stack without user frames has no user stack and no location", () => {
  const internal = [`Error: broken`, `    at f (${eddy("runtime/stream-task.ts")}:1:1)`, "    at node:internal/x:1:1"].join("\n");
  assert.equal(userStack(internal), undefined);
  assert.equal(userLocation(internal), undefined);
});

test("an inline failure: the wrapper's stack and its cause's, located at the cause's first user frame", () => {
  const cause = new TypeError("no field");
  cause.stack = `TypeError: no field\n    at <anonymous> (/srv/job.ts:6:28)\n    at Object.processElement (${eddy("runtime/operators/stateless-operators.ts")}:21:20)`;
  const error = userFunctionError({ operatorName: "Fields", subtaskIndex: 0, parallelism: 1 }, cause);
  const stack = stackWithCauses(error)!;
  assert.match(stack, /^EddyError: user function failed in operator 'Fields' \(subtask 0 of 1\): TypeError: no field\n/);
  assert.match(stack, /\nCaused by: TypeError: no field\n {4}at <anonymous> \(\/srv\/job\.ts:6:28\)/);
  const fields = failureFields(error);
  assert.deepEqual(
    { ...fields, stack: undefined },
    { error: error.message, code: "USER_FUNCTION_FAILED", operator: "Fields", subtask: 0, parallelism: 1, location: "/srv/job.ts:6:28", stack: undefined },
  );
  assert.equal(fields.stack, stack);
});

test("userStacksOnly cuts a line's stack to the user's frames and drops it when there are none", () => {
  const lines: (LogFields | undefined)[] = [];
  const logger = userStacksOnly({ debug() {}, info() {}, warn: (_m, f) => void lines.push(f), error: (_m, f) => void lines.push(f) });
  logger.warn("a task failed", { job: "j", stack: WORKER_STACK });
  logger.error("job failed", { job: "j", stack: `EddyError: x\n    at f (${eddy("core/errors.ts")}:1:1)` });
  logger.error("no stack", { job: "j" });
  assert.deepEqual(lines, [{ job: "j", stack: userStack(WORKER_STACK) }, { job: "j" }, { job: "j" }]);
});
