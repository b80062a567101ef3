/**
 * The gateway protocol (gateway.ts): a call made on one side arrives as the same call on the
 * other, through a real MessagePort (what carries it between threads); what is not a message of
 * this protocol version is refused, not acted on; and a worker's error arrives as raised.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { MessageChannel } from "node:worker_threads";
import { EddyError } from "../core/errors.ts";
import {
  checkProtocolVersion,
  deserializeError,
  dispatchGatewayMessage,
  GATEWAY_PROTOCOL_VERSION,
  JOB_MASTER_METHODS,
  remoteGateway,
  TASK_MANAGER_METHODS,
  type JobMasterGateway,
  type SerializedError,
  type TaskManagerGateway,
} from "./gateway.ts";
import type { QueryableRegistration } from "../queryable/queryable-serving.ts";

/** A gateway that records every call, in order, as [method, ...args]. */
function recorder<G>(methods: readonly (keyof G & string)[]): { gateway: G; calls: unknown[][] } {
  const calls: unknown[][] = [];
  const gateway: Record<string, (...args: unknown[]) => void> = {};
  for (const m of methods) gateway[m] = (...args: unknown[]) => void calls.push([m, ...args]);
  return { gateway: gateway as G, calls };
}

/** Carries `count` messages from port1 to port2 and dispatches them to `target`. */
async function carry<G>(methods: readonly (keyof G & string)[], target: G, make: (remote: G) => void, count: number): Promise<void> {
  const { port1, port2 } = new MessageChannel();
  let received = 0;
  const all = new Promise<void>((resolve) => {
    port2.on("message", (message: unknown) => {
      dispatchGatewayMessage(target, methods, message);
      if (++received === count) resolve();
    });
  });
  make(remoteGateway<G>(methods, (message) => port1.postMessage(message)));
  await all;
  port1.close();
  port2.close();
}

test("coordinator → task manager: every call arrives as the same call, with its arguments, in order", async () => {
  const { gateway, calls } = recorder<TaskManagerGateway>(TASK_MANAGER_METHODS);
  const barrier = { kind: "barrier", checkpointId: 7, timestampMs: 1_000, isSavepoint: true } as const;
  await carry<TaskManagerGateway>(
    TASK_MANAGER_METHODS,
    gateway,
    (tm) => {
      tm.assignSplits(2, 1, [{ path: "a.csv", offset: 10 }]);
      tm.noMoreSplits(2, 1);
      tm.updateMaxAllowedWatermark(2, 1, 1_500);
      tm.triggerCheckpoint(barrier, { drain: true });
      tm.triggerCheckpoint(barrier, undefined);
      tm.resumeSources();
      tm.notifyCheckpointComplete(7);
      tm.notifyCheckpointAborted(8);
      tm.triggerFinalCheckpoint({ ...barrier, checkpointId: 9, isSavepoint: false });
      tm.stop();
      tm.cancel();
      tm.closeServers();
    },
    12,
  );
  assert.deepEqual(calls, [
    ["assignSplits", 2, 1, [{ path: "a.csv", offset: 10 }]],
    ["noMoreSplits", 2, 1],
    ["updateMaxAllowedWatermark", 2, 1, 1_500],
    ["triggerCheckpoint", barrier, { drain: true }],
    ["triggerCheckpoint", barrier, undefined],
    ["resumeSources"],
    ["notifyCheckpointComplete", 7],
    ["notifyCheckpointAborted", 8],
    ["triggerFinalCheckpoint", { ...barrier, checkpointId: 9, isSavepoint: false }],
    ["stop"],
    ["cancel"],
    ["closeServers"],
  ]);
  // Every method of the interface was carried (the list is the transport's only knowledge of them).
  assert.deepEqual(new Set(calls.map((c) => c[0])), new Set(TASK_MANAGER_METHODS));
});

test("task manager → coordinator: every call arrives as the same call, with its arguments, in order", async () => {
  const { gateway, calls } = recorder<JobMasterGateway>(JOB_MASTER_METHODS);
  const ack = { state: { taskId: "t", chain: 0, subtask: 0, file: null, operators: [] }, syncMs: 1, asyncMs: 2, alignmentMs: 0, bytes: 0 };
  const error: SerializedError = { code: "TASK_STUCK", message: "stuck", domain: "user", retryable: false, operator: "map", subtask: 0, parallelism: 1, stack: undefined };
  const registration: QueryableRegistration = { name: "counts", operatorId: "op", operatorName: "count", subtask: 1, parallelism: 2, maxParallelism: 128, url: "http://127.0.0.1:4000" };
  await carry<JobMasterGateway>(
    JOB_MASTER_METHODS,
    gateway,
    (jm) => {
      jm.registerTaskManager(GATEWAY_PROTOCOL_VERSION);
      jm.requestSplit(3, 0);
      jm.reportWatermark(3, 0, "lanes", Number.POSITIVE_INFINITY, 200);
      jm.reportOutput([["out", [1, "two"]]], ["line"]);
      jm.commitOnce("sink", "txn-1", [{ a: 1 }]);
      jm.log("warn", "careful", { worker: 1 });
      jm.reportMetrics(10, []);
      jm.taskManagerFinished(11, []);
      jm.taskManagerFailed(error);
      jm.acknowledgeCheckpoint("t", 4, ack);
      jm.declineCheckpoint("t", 5, "no room");
      jm.taskFinished("t");
      jm.queryableRegistered(registration);
      jm.serversClosed();
    },
    14,
  );
  assert.deepEqual(calls, [
    ["registerTaskManager", GATEWAY_PROTOCOL_VERSION],
    ["requestSplit", 3, 0],
    ["reportWatermark", 3, 0, "lanes", Number.POSITIVE_INFINITY, 200],
    ["reportOutput", [["out", [1, "two"]]], ["line"]],
    ["commitOnce", "sink", "txn-1", [{ a: 1 }]],
    ["log", "warn", "careful", { worker: 1 }],
    ["reportMetrics", 10, []],
    ["taskManagerFinished", 11, []],
    ["taskManagerFailed", error],
    ["acknowledgeCheckpoint", "t", 4, ack],
    ["declineCheckpoint", "t", 5, "no room"],
    ["taskFinished", "t"],
    ["queryableRegistered", registration],
    ["serversClosed"],
  ]);
  assert.deepEqual(new Set(calls.map((c) => c[0])), new Set(JOB_MASTER_METHODS));
});

test("a message that is not a call of this protocol version is refused, and nothing is called", () => {
  const { gateway, calls } = recorder<TaskManagerGateway>(TASK_MANAGER_METHODS);
  const refused = (message: unknown, pattern: RegExp): void =>
    assert.throws(
      () => dispatchGatewayMessage(gateway, TASK_MANAGER_METHODS, message),
      (e: unknown) => e instanceof EddyError && e.code === "GATEWAY_PROTOCOL" && pattern.test(e.message),
    );
  // The message shape of the protocol before the gateway (worker_threads' old union).
  refused({ t: "checkpoint-complete", checkpointId: 3 }, /not a message of gateway protocol version 2: a message 'checkpoint-complete'/);
  // A method of the other gateway, an inherited property, one the list lacks, no arguments.
  refused({ m: "registerTaskManager", a: [1] }, /a message 'registerTaskManager'/);
  refused({ m: "constructor", a: [] }, /a message 'constructor'/);
  refused({ m: "toString", a: [] }, /a message 'toString'/);
  refused({ m: "stop" }, /a message 'stop'/);
  refused(null, /: null$/);
  refused("stop", /: stop$/);
  assert.deepEqual(calls, []);
});

test("a task manager of another protocol version is refused when it registers", () => {
  checkProtocolVersion(GATEWAY_PROTOCOL_VERSION, "worker 0");
  for (const version of [GATEWAY_PROTOCOL_VERSION + 1, 0, "1", undefined]) {
    assert.throws(
      () => checkProtocolVersion(version, "worker 2"),
      (e: unknown) =>
        e instanceof EddyError &&
        e.code === "GATEWAY_PROTOCOL" &&
        e.message.startsWith(`worker 2 speaks gateway protocol version ${String(version)}, this coordinator ${GATEWAY_PROTOCOL_VERSION}`),
    );
  }
});

const reported: SerializedError = {
  code: "SAVEPOINT_FAILED",
  message: "cannot take a savepoint: the job has failed",
  domain: "user",
  retryable: false,
  operator: "Counter",
  subtask: 2,
  parallelism: 4,
  stack: "EddyError: cannot take a savepoint",
};

test("a worker's error arrives with its code, domain, retry hint, operator, subtask and parallelism as raised", () => {
  const e = deserializeError(reported, 1);
  assert.ok(e instanceof EddyError);
  assert.deepEqual([e.code, e.message, e.domain, e.retryable, e.operator, e.subtask, e.parallelism], ["SAVEPOINT_FAILED", reported.message, "user", false, "Counter", 2, 4]);
  assert.equal(e.stack, `${reported.stack}\n    (reported by worker 1)`);
});

test("a worker's error with a code this build does not know arrives as UNKNOWN_ERROR_CODE, keeping the original", () => {
  for (const code of ["NO_SUCH_CODE", "constructor", ""]) {
    const e = deserializeError({ ...reported, code }, 3);
    assert.equal(e.code, "UNKNOWN_ERROR_CODE");
    assert.equal(e.domain, "internal");
    assert.equal(e.retryable, false);
    assert.equal(e.message, `${reported.message} (worker 3 reported the unknown code '${code}')`);
    assert.deepEqual([e.operator, e.subtask], ["Counter", 2]);
  }
});
