import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { EddyError } from "../core/errors.ts";
import { type CheckpointConfigInput, resolveCheckpointConfig } from "./checkpoint-config.ts";
import { CheckpointCoordinator, type CoordinatorCommand, STATS_HISTORY, type TaskAck } from "./coordinator.ts";

const TASKS = ["source-0", "map-0", "sink-0"] as const;

function ackOf(over: Partial<TaskAck> = {}): TaskAck {
  return { state: { handle: "h" }, syncMs: 1, asyncMs: 2, alignmentMs: 3, bytes: 10, ...over };
}

function coordinator(config: Omit<CheckpointConfigInput, "intervalMs"> & { intervalMs?: number } = {}, now = 0, tasks: readonly string[] = TASKS) {
  return new CheckpointCoordinator(resolveCheckpointConfig({ intervalMs: 100, ...config }), { tasks, firstCheckpointId: 1, now });
}

/** Acks `id` from every task; returns the commands of the last ack. */
function ackAll(c: CheckpointCoordinator, id: number, now: number, tasks: readonly string[] = TASKS): CoordinatorCommand[] {
  let last: CoordinatorCommand[] = [];
  for (const t of tasks) last = c.acknowledge(id, t, ackOf(), now);
  return last;
}

const types = (commands: readonly CoordinatorCommand[]) => commands.map((c) => ("checkpointId" in c ? `${c.type} ${c.checkpointId}` : c.type));
const trigger = (id: number, timestampMs: number, isSavepoint = false): CoordinatorCommand => ({ type: "trigger", checkpointId: id, timestampMs, isSavepoint });

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

test("resolveCheckpointConfig fills in the defaults", () => {
  assert.deepEqual(resolveCheckpointConfig({ intervalMs: 5000 }), {
    intervalMs: 5000,
    mode: "exactly-once",
    timeoutMs: 600_000,
    minPauseMs: 0,
    maxConcurrent: 1,
    tolerableFailures: 0,
    retained: 3,
    allowRecoveryBehindCommitted: false,
  });
  assert.equal(resolveCheckpointConfig({ intervalMs: 1, tolerableFailures: Infinity }).tolerableFailures, Infinity);
});

test("resolveCheckpointConfig rejects a bad field with INVALID_CHECKPOINT_CONFIG naming it", () => {
  const bad: [CheckpointConfigInput, string][] = [
    [{ intervalMs: 0 }, "intervalMs"],
    [{ intervalMs: Number.NaN }, "intervalMs"],
    [{ intervalMs: 1, mode: "exactly-twice" as "exactly-once" }, "mode"],
    [{ intervalMs: 1, timeoutMs: -1 }, "timeoutMs"],
    [{ intervalMs: 1, minPauseMs: -1 }, "minPauseMs"],
    [{ intervalMs: 1, maxConcurrent: 0 }, "maxConcurrent"],
    [{ intervalMs: 1, maxConcurrent: 1.5 }, "maxConcurrent"],
    [{ intervalMs: 1, tolerableFailures: -1 }, "tolerableFailures"],
    [{ intervalMs: 1, retained: 0 }, "retained"],
    [{ intervalMs: 1, intervalMS: 5 } as CheckpointConfigInput, "intervalMS"],
  ];
  for (const [input, field] of bad) {
    assert.throws(
      () => resolveCheckpointConfig(input),
      (e: unknown) => e instanceof EddyError && e.code === "INVALID_CHECKPOINT_CONFIG" && e.domain === "config" && e.message.includes(`'${field}'`),
      field,
    );
  }
});

test("the constructor rejects empty or duplicate tasks and a bad first id", () => {
  const config = resolveCheckpointConfig({ intervalMs: 1 });
  assert.throws(() => new CheckpointCoordinator(config, { tasks: [], firstCheckpointId: 1, now: 0 }), /non-empty and unique/);
  assert.throws(() => new CheckpointCoordinator(config, { tasks: ["a", "a"], firstCheckpointId: 1, now: 0 }), /non-empty and unique/);
  assert.throws(() => new CheckpointCoordinator(config, { tasks: ["a"], firstCheckpointId: 0, now: 0 }), /firstCheckpointId/);
});

// ---------------------------------------------------------------------------------------------
// Rules, one each, on a simulated clock
// ---------------------------------------------------------------------------------------------

test("triggers periodically every intervalMs, measured trigger to trigger, first one interval after start", () => {
  const c = coordinator({ maxConcurrent: 5 }, 1000);
  assert.deepEqual(c.tick(1099), []);
  assert.deepEqual(c.tick(1100), [trigger(1, 1100)]);
  assert.deepEqual(c.tick(1150), []);
  assert.deepEqual(c.tick(1230), [trigger(2, 1230)], "late tick: triggers at once");
  assert.deepEqual(c.tick(1329), []);
  assert.deepEqual(c.tick(1330), [trigger(3, 1330)], "measured from the late trigger");
  assert.deepEqual(c.tick(2000), [trigger(4, 2000)], "a long gap yields one trigger, not a burst");
  assert.deepEqual(c.tick(2000), []);
});

test("a completed checkpoint: all acks → commit-manifest; committed → notify-complete; stats filled in, per subtask too", () => {
  const c = coordinator({}, 0);
  c.tick(100);
  assert.deepEqual(c.acknowledge(1, "source-0", ackOf({ syncMs: 5, asyncMs: 1, alignmentMs: 0, bytes: 100 }), 110), []);
  assert.deepEqual(c.acknowledge(1, "map-0", ackOf({ syncMs: 2, asyncMs: 9, alignmentMs: 4, bytes: 50, operatorBytes: { map: 30, "map-2": 12 } }), 120), []);
  const commit = c.acknowledge(1, "sink-0", ackOf({ syncMs: 1, asyncMs: 1, alignmentMs: 7, bytes: 1 }), 130);
  assert.equal(commit.length, 1);
  const cmd = commit[0]!;
  assert.ok(cmd.type === "commit-manifest" && cmd.checkpointId === 1 && !cmd.isSavepoint);
  assert.deepEqual([...cmd.acks.keys()].sort(), [...TASKS].sort());
  assert.equal(c.latestCompleted, undefined, "not complete before the manifest is committed");
  assert.equal(c.stats()[0]!.status, "in-progress");
  assert.deepEqual(c.manifestCommitted(1, 140), [{ type: "notify-complete", checkpointId: 1 }]);
  assert.equal(c.latestCompleted, 1);
  assert.deepEqual(c.stats(), [
    {
      checkpointId: 1,
      isSavepoint: false,
      triggerTimeMs: 100,
      status: "completed",
      durationMs: 40,
      acknowledgedTasks: 3,
      totalTasks: 3,
      syncMs: 5,
      asyncMs: 9,
      alignmentMs: 7,
      bytes: 151,
      failureReason: undefined,
      subtasks: [
        { taskId: "source-0", ackTimeMs: 110, syncMs: 5, asyncMs: 1, alignmentMs: 0, bytes: 100, operatorBytes: {} },
        { taskId: "map-0", ackTimeMs: 120, syncMs: 2, asyncMs: 9, alignmentMs: 4, bytes: 50, operatorBytes: { map: 30, "map-2": 12 } },
        { taskId: "sink-0", ackTimeMs: 130, syncMs: 1, asyncMs: 1, alignmentMs: 7, bytes: 1, operatorBytes: {} },
      ],
    },
  ]);
});

test("never more than maxConcurrent in progress, periodic or manual", () => {
  const c = coordinator({ maxConcurrent: 2 }, 0);
  assert.deepEqual(types(c.tick(100)), ["trigger 1"]);
  assert.deepEqual(types(c.tick(200)), ["trigger 2"]);
  assert.deepEqual(c.tick(300), [], "two in progress");
  const manual = c.triggerNow(310, { isSavepoint: true });
  assert.deepEqual(manual, { ok: false, reason: "2 checkpoint(s) in progress, the most allowed (maxConcurrent 2)" });
  ackAll(c, 1, 320);
  assert.deepEqual(types(c.manifestCommitted(1, 330)), ["notify-complete 1"]);
  assert.deepEqual(types(c.tick(330)), ["trigger 3"], "overdue since 300: triggered as soon as allowed");
  assert.equal(c.inProgress, 2);
});

test("the next periodic trigger waits minPauseMs after the last checkpoint completed or failed", () => {
  const c = coordinator({ minPauseMs: 80 }, 0);
  c.tick(100);
  ackAll(c, 1, 150);
  c.manifestCommitted(1, 190);
  assert.deepEqual(c.tick(200), [], "interval passed, pause not");
  assert.deepEqual(c.tick(269), []);
  assert.deepEqual(types(c.tick(270)), ["trigger 2"]);
  c.decline(2, "map-0", "disk full", 280);
  assert.equal(c.isStopped, true, "tolerableFailures 0");

  const d = coordinator({ minPauseMs: 80, tolerableFailures: 5 }, 0);
  d.tick(100);
  d.decline(1, "map-0", "busy", 150);
  assert.deepEqual(d.tick(229), []);
  assert.deepEqual(types(d.tick(230)), ["trigger 2"], "a failure starts the pause too");
  assert.equal(d.triggerNow(231, { isSavepoint: false }).ok, false, "maxConcurrent 1");
});

test("a manual trigger skips interval and pause, returns its id, and resets the periodic schedule", () => {
  const c = coordinator({ minPauseMs: 1000, maxConcurrent: 3 }, 0);
  const first = c.triggerNow(10, { isSavepoint: false });
  assert.deepEqual(first, { ok: true, checkpointId: 1, commands: [trigger(1, 10)] });
  assert.deepEqual(c.tick(100), [], "measured from the manual checkpoint");
  assert.deepEqual(types(c.tick(110)), ["trigger 2"]);
  const savepoint = c.triggerNow(120, { isSavepoint: true });
  assert.deepEqual(savepoint, { ok: true, checkpointId: 3, commands: [trigger(3, 120, true)] });
  assert.deepEqual(types(c.tick(210)), [], "three in progress");
});

test("a checkpoint in progress timeoutMs after its trigger is aborted at the next tick and counts as a failure", () => {
  const c = coordinator({ timeoutMs: 50, tolerableFailures: 1, intervalMs: 1000 }, 0);
  c.tick(1000);
  ackAll(c, 1, 1010, ["source-0", "map-0"]);
  assert.deepEqual(c.tick(1049), []);
  assert.deepEqual(c.tick(1050), [{ type: "abort", checkpointId: 1, reason: "expired 50 ms after its trigger" }]);
  assert.equal(c.consecutiveFailures, 1);
  const s = c.stats()[0]!;
  assert.equal(s.status, "failed");
  assert.equal(s.durationMs, 50);
  assert.equal(s.acknowledgedTasks, 2);
  assert.deepEqual(c.acknowledge(1, "sink-0", ackOf(), 1060), [], "a late ack is ignored");
  assert.equal(c.ignoredMessages, 1);
});

test("the timeout covers the manifest write too", () => {
  const c = coordinator({ timeoutMs: 50, tolerableFailures: 1, intervalMs: 1000 }, 0);
  c.tick(1000);
  assert.equal(ackAll(c, 1, 1010)[0]!.type, "commit-manifest");
  assert.deepEqual(types(c.tick(1060)), ["abort 1"]);
  assert.deepEqual(c.manifestCommitted(1, 1070), [], "too late: ignored, the I/O layer deletes the directory");
  assert.equal(c.latestCompleted, undefined);
});

test("more than tolerableFailures consecutive failures (timeout, decline, manifest) fail the job; a completion resets the count", () => {
  const c = coordinator({ tolerableFailures: 2, maxConcurrent: 3, timeoutMs: 1000 }, 0);
  c.tick(100);
  assert.deepEqual(types(c.decline(1, "sink-0", "snapshot threw", 110)), ["abort 1"]);
  c.tick(200);
  ackAll(c, 2, 210);
  assert.deepEqual(types(c.manifestFailed(2, "EACCES", 220)), ["abort 2"]);
  assert.equal(c.consecutiveFailures, 2);
  c.tick(300);
  ackAll(c, 3, 310);
  c.manifestCommitted(3, 320);
  assert.equal(c.consecutiveFailures, 0, "reset by a completed checkpoint");
  c.tick(420);
  c.tick(520);
  c.decline(4, "map-0", "x", 530);
  c.decline(5, "map-0", "y", 540);
  c.tick(620);
  c.tick(720);
  assert.equal(c.isStopped, false);
  assert.deepEqual(types(c.tick(1620)), ["abort 6", "abort 7", "fail-job"], "7 is aborted with the job");
  const stats = c.stats();
  assert.deepEqual(
    stats.map((s) => [s.checkpointId, s.status, s.failureReason]),
    [
      [1, "failed", "declined by task 'sink-0': snapshot threw"],
      [2, "failed", "manifest failed: EACCES"],
      [3, "completed", undefined],
      [4, "failed", "declined by task 'map-0': x"],
      [5, "failed", "declined by task 'map-0': y"],
      [6, "failed", "expired 1000 ms after its trigger"],
      [7, "failed", "the job failed"],
    ],
  );
});

test("fail-job carries an EddyError; after it the coordinator is stopped and silent", () => {
  const c = coordinator({}, 0);
  c.tick(100);
  const commands = c.decline(1, "map-0", "boom", 110);
  const failJob = commands.at(-1)!;
  assert.ok(failJob.type === "fail-job");
  assert.equal(failJob.error.code, "TOO_MANY_CHECKPOINT_FAILURES");
  assert.match(failJob.reason, /1 consecutive checkpoints failed \(tolerable: 0\); the last: declined by task 'map-0': boom/);
  assert.equal(c.isStopped, true);
  assert.deepEqual(c.tick(10_000), []);
  assert.deepEqual(c.triggerNow(10_000, { isSavepoint: true }), { ok: false, reason: "the job has failed" });
  assert.deepEqual(c.acknowledge(1, "map-0", ackOf(), 10_000), []);
  assert.deepEqual(c.taskFinished("map-0", 10_000), []);
});

test("acks for unknown, aborted or duplicate ids, and from unknown tasks, are ignored and counted", () => {
  const c = coordinator({ tolerableFailures: 10 }, 0);
  c.tick(100);
  assert.deepEqual(c.acknowledge(7, "map-0", ackOf(), 110), [], "unknown id");
  assert.deepEqual(c.acknowledge(1, "map-0", ackOf(), 110), []);
  assert.deepEqual(c.acknowledge(1, "map-0", ackOf(), 111), [], "duplicate");
  assert.deepEqual(c.acknowledge(1, "nobody", ackOf(), 112), [], "unknown task");
  assert.deepEqual(c.decline(7, "map-0", "x", 113), [], "decline of unknown id");
  assert.deepEqual(c.manifestCommitted(1, 114), [], "manifest of a checkpoint not yet fully acked");
  c.decline(1, "sink-0", "x", 115);
  assert.deepEqual(c.acknowledge(1, "sink-0", ackOf(), 116), [], "aborted id");
  assert.deepEqual(c.manifestFailed(1, "x", 117), [], "aborted id");
  assert.equal(c.ignoredMessages, 7);
  assert.equal(c.stats()[0]!.acknowledgedTasks, 1, "the ignored acks changed nothing");
});

test("a completion aborts older checkpoints as subsumed (not failures); notify-complete only for increasing ids", () => {
  const c = coordinator({ maxConcurrent: 3 }, 0);
  c.tick(100);
  c.tick(200);
  c.tick(300);
  ackAll(c, 1, 310);
  ackAll(c, 2, 320);
  assert.deepEqual(c.manifestCommitted(2, 330), [
    { type: "abort", checkpointId: 1, reason: "subsumed by checkpoint 2" },
    { type: "notify-complete", checkpointId: 2 },
  ]);
  assert.deepEqual(c.manifestCommitted(1, 340), [], "1 was subsumed while its manifest was being written");
  assert.equal(c.consecutiveFailures, 0);
  assert.equal(c.isStopped, false);
  assert.deepEqual(
    c.stats().map((s) => [s.checkpointId, s.status]),
    [
      [1, "subsumed"],
      [2, "completed"],
      [3, "in-progress"],
    ],
  );
});

test("retention keeps the newest `retained` completed checkpoints and discards older ones after a newer completes", () => {
  const c = coordinator({ retained: 2 }, 0);
  const complete = (id: number, now: number) => {
    c.tick(now);
    ackAll(c, id, now + 1);
    return c.manifestCommitted(id, now + 2);
  };
  assert.deepEqual(types(complete(1, 100)), ["notify-complete 1"]);
  assert.deepEqual(types(complete(2, 200)), ["notify-complete 2"]);
  assert.deepEqual(types(complete(3, 300)), ["notify-complete 3", "discard 1"]);
  assert.equal(c.triggerNow(400, { isSavepoint: true }).ok, true);
  ackAll(c, 4, 401);
  assert.deepEqual(types(c.manifestCommitted(4, 402)), ["notify-complete 4"], "savepoints are the user's: never discarded");
  assert.equal(c.latestCompleted, 3, "recovery uses checkpoints, not savepoints");
  assert.deepEqual(types(complete(5, 500)), ["notify-complete 5", "discard 2"]);
});

test("savepoint failures do not count toward the tolerable failures", () => {
  const c = coordinator({}, 0);
  c.triggerNow(10, { isSavepoint: true });
  assert.deepEqual(types(c.decline(1, "map-0", "x", 20)), ["abort 1"]);
  assert.equal(c.isStopped, false);
  assert.equal(c.consecutiveFailures, 0);
});

test("after a task has finished, checkpoints go on (it still acknowledges); after every task, none is triggered", () => {
  const c = coordinator({ maxConcurrent: 2 }, 0);
  c.tick(100);
  c.acknowledge(1, "source-0", ackOf(), 110);
  assert.deepEqual(c.taskFinished("source-0", 120), [], "nothing in progress fails");
  ackAll(c, 1, 130, ["map-0", "sink-0"]);
  assert.deepEqual(types(c.manifestCommitted(1, 140)), ["notify-complete 1"]);
  assert.deepEqual(types(c.tick(200)), ["trigger 2"], "periodic checkpoints go on");
  const savepoint = c.triggerNow(210, { isSavepoint: true });
  assert.equal(savepoint.ok, true, "so do savepoints");
  ackAll(c, 2, 220);
  assert.deepEqual(types(c.manifestCommitted(2, 230)), ["notify-complete 2"], "the finished task's acknowledgement counts");
  c.taskFinished("map-0", 240);
  c.taskFinished("sink-0", 240);
  assert.deepEqual(c.taskFinished("sink-0", 250), [], "idempotent");
  assert.deepEqual(types(c.tick(1000)), [], "every task finished: no trigger");
  assert.deepEqual(c.triggerNow(1000, { isSavepoint: true }), { ok: false, reason: "every task has finished" });
});

test("stats keep every checkpoint in progress and the last STATS_HISTORY ended ones", () => {
  const c = coordinator({ intervalMs: 1 }, 0);
  for (let i = 1; i <= STATS_HISTORY + 20; i++) {
    c.tick(i * 10);
    ackAll(c, i, i * 10 + 1);
    c.manifestCommitted(i, i * 10 + 2);
  }
  c.tick(100_000);
  const stats = c.stats();
  assert.equal(stats.length, STATS_HISTORY + 1);
  assert.equal(stats[0]!.checkpointId, 21);
  assert.equal(stats.at(-1)!.status, "in-progress");
});

test("a clock stepping back does not move time back", () => {
  const c = coordinator({ timeoutMs: 50, tolerableFailures: 5, intervalMs: 1000 }, 0);
  c.tick(1000);
  c.tick(1040);
  assert.deepEqual(c.tick(500), []);
  assert.deepEqual(types(c.tick(1050)), ["abort 1"]);
});

// ---------------------------------------------------------------------------------------------
// Property: random event sequences keep the invariants
// ---------------------------------------------------------------------------------------------

type Action =
  | { readonly kind: "tick"; readonly advanceMs: number }
  | { readonly kind: "manual"; readonly isSavepoint: boolean }
  | { readonly kind: "ack"; readonly pick: number; readonly task: number }
  | { readonly kind: "decline"; readonly pick: number; readonly task: number }
  | { readonly kind: "committed"; readonly pick: number }
  | { readonly kind: "manifest-failed"; readonly pick: number }
  | { readonly kind: "finish"; readonly task: number };

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("tick" as const), advanceMs: fc.integer({ min: 0, max: 60 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("manual" as const), isSavepoint: fc.boolean() }) },
  { weight: 10, arbitrary: fc.record({ kind: fc.constant("ack" as const), pick: fc.nat(), task: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("decline" as const), pick: fc.nat(), task: fc.nat() }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("committed" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("manifest-failed" as const), pick: fc.nat() }) },
);
/** A task finishing ends checkpointing for good, so a run has at most one, late. */
const finishArb = fc.option(fc.record({ kind: fc.constant("finish" as const), task: fc.nat() }), { freq: 3 });

const configArb = fc.record({
  intervalMs: fc.integer({ min: 1, max: 100 }),
  timeoutMs: fc.integer({ min: 1, max: 300 }),
  minPauseMs: fc.integer({ min: 0, max: 50 }),
  maxConcurrent: fc.integer({ min: 1, max: 3 }),
  tolerableFailures: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constant(Number.POSITIVE_INFINITY)),
  retained: fc.integer({ min: 1, max: 3 }),
});

/** Watches the command stream and checks every invariant of the coordinator on it. */
class CommandObserver {
  triggered: number[] = [];
  triggerTime = new Map<number, number>();
  savepoints = new Set<number>();
  manifestRequested = new Set<number>();
  committedCalls = new Set<number>();
  outcome = new Map<number, "completed" | "aborted">();
  completedCheckpoints: number[] = [];
  discarded = new Set<number>();
  lastNotified = 0;
  failedJob = false;

  constructor(readonly maxConcurrent: number, readonly retained: number) {}

  inProgress(): number[] {
    return this.triggered.filter((id) => !this.outcome.has(id));
  }

  observe(commands: readonly CoordinatorCommand[], now: number): void {
    for (const cmd of commands) {
      assert.equal(this.failedJob, false, "nothing after fail-job");
      switch (cmd.type) {
        case "trigger":
          assert.ok(cmd.checkpointId > (this.triggered.at(-1) ?? 0), "trigger ids strictly increase");
          assert.equal(cmd.timestampMs, now);
          this.triggered.push(cmd.checkpointId);
          this.triggerTime.set(cmd.checkpointId, now);
          if (cmd.isSavepoint) this.savepoints.add(cmd.checkpointId);
          assert.ok(this.inProgress().length <= this.maxConcurrent, "at most maxConcurrent in progress");
          break;
        case "commit-manifest":
          assert.ok(this.inProgress().includes(cmd.checkpointId));
          assert.ok(!this.manifestRequested.has(cmd.checkpointId), "commit-manifest once");
          this.manifestRequested.add(cmd.checkpointId);
          break;
        case "notify-complete":
          assert.ok(this.manifestRequested.has(cmd.checkpointId) && this.committedCalls.has(cmd.checkpointId), "notify only after its manifest committed");
          assert.ok(cmd.checkpointId > this.lastNotified, "notify-complete ids increase");
          assert.ok(!this.outcome.has(cmd.checkpointId));
          this.lastNotified = cmd.checkpointId;
          this.outcome.set(cmd.checkpointId, "completed");
          if (!this.savepoints.has(cmd.checkpointId)) this.completedCheckpoints.push(cmd.checkpointId);
          break;
        case "abort":
          assert.ok(this.triggered.includes(cmd.checkpointId) && !this.outcome.has(cmd.checkpointId), "abort ends an in-progress checkpoint, once");
          this.outcome.set(cmd.checkpointId, "aborted");
          break;
        case "discard": {
          assert.ok(!this.savepoints.has(cmd.checkpointId), "savepoints are never discarded");
          assert.ok(!this.discarded.has(cmd.checkpointId), "discard once");
          const newest = this.completedCheckpoints.slice(-this.retained);
          assert.ok(this.completedCheckpoints.includes(cmd.checkpointId) && !newest.includes(cmd.checkpointId), "discard never targets the newest retained");
          this.discarded.add(cmd.checkpointId);
          break;
        }
        case "fail-job":
          this.failedJob = true;
          break;
      }
    }
  }
}

test("random event sequences keep the coordinator's invariants", () => {
  fc.assert(
    fc.property(configArb, fc.integer({ min: 1, max: 3 }), fc.array(actionArb, { maxLength: 200, size: "max" }), finishArb, (config, numTasks, actions, finish) => {
      if (finish !== null) actions = [...actions.slice(0, actions.length - 10), finish, ...actions.slice(-10)];
      const tasks = Array.from({ length: numTasks }, (_, i) => `t${i}`);
      const c = new CheckpointCoordinator(resolveCheckpointConfig(config), { tasks, firstCheckpointId: 1, now: 0 });
      const o = new CommandObserver(config.maxConcurrent, config.retained);
      let now = 0;
      // Mostly about checkpoints in progress, sometimes about any id triggered (or not) so far.
      const pick = (ids: readonly number[], n: number) => {
        const live = ids.filter((id) => !o.outcome.has(id));
        const pool = n % 4 === 0 || live.length === 0 ? ids : live;
        return pool.length === 0 ? n % 5 : pool[Math.floor(n / 4) % pool.length]!;
      };
      for (const a of actions) {
        let commands: CoordinatorCommand[];
        switch (a.kind) {
          case "tick":
            now += a.advanceMs;
            commands = c.tick(now);
            break;
          case "manual": {
            const outcome = c.triggerNow(now, { isSavepoint: a.isSavepoint });
            commands = outcome.ok ? outcome.commands : [];
            if (outcome.ok) assert.deepEqual(outcome.commands, [{ type: "trigger", checkpointId: outcome.checkpointId, timestampMs: now, isSavepoint: a.isSavepoint }]);
            else assert.ok(outcome.reason.length > 0);
            break;
          }
          case "ack":
            commands = c.acknowledge(pick(o.triggered, a.pick), tasks[a.task % numTasks]!, ackOf(), now);
            break;
          case "decline":
            commands = c.decline(pick(o.triggered, a.pick), tasks[a.task % numTasks]!, "random", now);
            break;
          case "committed": {
            const id = pick([...o.manifestRequested], a.pick);
            o.committedCalls.add(id);
            commands = c.manifestCommitted(id, now);
            break;
          }
          case "manifest-failed":
            commands = c.manifestFailed(pick([...o.manifestRequested], a.pick), "random", now);
            break;
          case "finish":
            commands = c.taskFinished(tasks[a.task % numTasks]!, now);
            break;
        }
        o.observe(commands, now);
        const inProgress = c.stats().filter((s) => s.status === "in-progress").map((s) => s.checkpointId);
        assert.deepEqual(inProgress, o.inProgress(), "stats agree with the commands");
        assert.equal(c.inProgress, inProgress.length);
      }
      // Liveness: once the timeout has passed, everything triggered before has ended, exactly once.
      const before = o.triggered.length;
      now += config.timeoutMs;
      o.observe(c.tick(now), now);
      for (const id of o.triggered.slice(0, before)) assert.ok(o.outcome.has(id), `checkpoint ${id} ended`);
      const byId = new Map(c.stats().map((s) => [s.checkpointId, s]));
      for (const [id, outcome] of o.outcome) {
        const s = byId.get(id);
        if (s === undefined) continue; // beyond the stats history
        assert.equal(outcome === "completed", s.status === "completed", `status of ${id}`);
        assert.notEqual(s.status, "in-progress");
      }
      assert.equal(c.latestCompleted, o.completedCheckpoints.at(-1));
    }),
    { numRuns: 500 },
  );
});
