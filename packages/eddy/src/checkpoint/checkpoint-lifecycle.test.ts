import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { type CheckpointConfigInput, resolveCheckpointConfig } from "./checkpoint-config.ts";
import { CheckpointLifecycle, type LifecycleCommand, SAVEPOINT_QUEUE_TIMEOUT_MS, type SavepointStop } from "./checkpoint-lifecycle.ts";
import type { CheckpointStats, TaskAck } from "./coordinator.ts";

interface Written {
  readonly path: string;
}
type Command = LifecycleCommand<Written>;

const TASKS = ["source-0", "map-0", "sink-0"] as const;
const ACK: TaskAck = { state: { handle: "h" }, syncMs: 1, asyncMs: 1, alignmentMs: 1, bytes: 1 };

function lifecycle(config: Omit<CheckpointConfigInput, "intervalMs"> & { intervalMs?: number } = {}, tasks: readonly string[] = TASKS) {
  return new CheckpointLifecycle<Written>(resolveCheckpointConfig({ intervalMs: 100, timeoutMs: 1_000_000, ...config }), {
    jobName: "j",
    tasks,
    firstCheckpointId: 1,
    now: 0,
  });
}

function ackAll(l: CheckpointLifecycle<Written>, id: number, now: number, tasks: readonly string[] = TASKS): Command[] {
  return tasks.flatMap((t) => l.acknowledge(id, t, ACK, now));
}

/** Commands in short: `trigger 1`, `reject-savepoint r2 JOB_STOPPING`, … */
function brief(commands: readonly Command[]): string[] {
  return commands.map((c) => {
    const parts: string[] = [c.type];
    if ("requestId" in c) parts.push(`r${c.requestId}`);
    if ("checkpointId" in c) parts.push(String(c.checkpointId));
    if (c.type === "reject-savepoint" || c.type === "fail-job") parts.push(c.error.code);
    if (c.type === "trigger" && c.isSavepoint) parts.push(c.stop === undefined ? "savepoint" : `stop drain=${c.stop.drain}`);
    if (c.type === "commit-manifest" && c.isFinal) parts.push("final");
    return parts.join(" ");
  });
}

function errorOf(commands: readonly Command[], type: "reject-savepoint" | "fail-job") {
  const c = commands.find((x) => x.type === type);
  assert.ok(c !== undefined && (c.type === "reject-savepoint" || c.type === "fail-job"), `no ${type} in ${brief(commands)}`);
  return c.error;
}

// ---------------------------------------------------------------------------------------------
// Rules, one each
// ---------------------------------------------------------------------------------------------

test("a checkpoint is announced and retention follows it", () => {
  const l = lifecycle();
  assert.deepEqual(brief(l.tick(100)), ["trigger 1"]);
  assert.deepEqual(brief(ackAll(l, 1, 110)), ["commit-manifest 1"]);
  assert.deepEqual(brief(l.manifestCommitted(1, 120)), ["notify-complete 1", "retain 1"]);
});

test("an intermediate savepoint is written and resolved, but not announced to tasks and not retained (FLIP-193)", () => {
  const l = lifecycle();
  const trigger = l.requestSavepoint(7, {}, 10);
  assert.deepEqual(trigger, [{ type: "trigger", checkpointId: 1, timestampMs: 10, isSavepoint: true, stop: undefined }]);
  assert.deepEqual(brief(ackAll(l, 1, 20)), ["write-savepoint r7 1"]);
  assert.deepEqual(l.savepointWritten(1, { path: "/sp" }, 30), [{ type: "resolve-savepoint", requestId: 7, checkpointId: 1, result: { path: "/sp" } }]);
  // The next checkpoint commits what the savepoint left pending.
  assert.deepEqual(brief(l.tick(200)), ["trigger 2"]);
  ackAll(l, 2, 210);
  assert.deepEqual(brief(l.manifestCommitted(2, 220)), ["notify-complete 2", "retain 2"]);
});

test("a request waits for a free slot, ahead of the periodic trigger, and expires untriggered after 60 s", () => {
  const l = lifecycle({ intervalMs: 100 });
  assert.deepEqual(brief(l.tick(100)), ["trigger 1"]);
  assert.deepEqual(l.requestSavepoint(1, {}, 150), [], "checkpoint 1 holds the only slot");
  assert.deepEqual(l.requestSavepoint(2, {}, 40_000), []);
  assert.deepEqual(l.tick(150 + SAVEPOINT_QUEUE_TIMEOUT_MS - 1), []);
  const expired = l.tick(150 + SAVEPOINT_QUEUE_TIMEOUT_MS);
  assert.deepEqual(brief(expired), ["reject-savepoint r1 SAVEPOINT_FAILED"]);
  assert.equal(errorOf(expired, "reject-savepoint").message, "no savepoint slot became free within 60000 ms");
  ackAll(l, 1, 60_200);
  l.manifestCommitted(1, 60_200);
  assert.deepEqual(brief(l.tick(60_300)), ["trigger 2 savepoint"], "request 2 takes the slot before the periodic checkpoint");
  assert.deepEqual(l.tick(40_000 + SAVEPOINT_QUEUE_TIMEOUT_MS + 1), [], "a triggered request does not expire");
});

test("requests are refused: at-least-once, a second stop, after stop(), once every task finished", () => {
  const alo = lifecycle({ mode: "at-least-once" });
  const e = errorOf(alo.requestSavepoint(1, {}, 0), "reject-savepoint");
  assert.equal(e.code, "SAVEPOINT_NEEDS_ALIGNMENT");
  assert.match(e.message, /job 'j' checkpoints at-least-once/);

  const l = lifecycle();
  assert.deepEqual(brief(l.requestSavepoint(1, { stop: { drain: false } }, 0)), ["trigger 1 stop drain=false"]);
  const again = l.requestSavepoint(2, { stop: { drain: true } }, 0);
  assert.deepEqual([errorOf(again, "reject-savepoint").code, errorOf(again, "reject-savepoint").message], ["JOB_STOPPING", "job 'j' is already stopping"]);
  assert.deepEqual(l.requestSavepoint(3, {}, 0), [], "an intermediate one may wait beside a stop");
  const stopped = l.stop();
  assert.deepEqual(brief(stopped), ["reject-savepoint r1 SAVEPOINT_FAILED", "reject-savepoint r3 SAVEPOINT_FAILED"]);
  assert.equal(errorOf(stopped, "reject-savepoint").message, "job 'j' ended before the savepoint completed");
  assert.deepEqual(l.stop(), [], "idempotent");
  assert.equal(errorOf(l.requestSavepoint(4, {}, 0), "reject-savepoint").code, "JOB_NOT_RUNNING");

  const done = lifecycle({}, ["a"]);
  done.taskFinished("a", 0);
  const refused = errorOf(done.requestSavepoint(1, {}, 0), "reject-savepoint");
  assert.deepEqual([refused.code, refused.message, refused.domain, refused.retryable], ["SAVEPOINT_FAILED", "cannot take a savepoint: every task has finished", "user", false]);
});

test("stop with a savepoint: the barrier carries the stop; sinks are told, then the request resolves and the job stops; nothing follows", () => {
  const l = lifecycle();
  assert.deepEqual(l.requestSavepoint(1, { stop: { drain: true } }, 10), [{ type: "trigger", checkpointId: 1, timestampMs: 10, isSavepoint: true, stop: { drain: true } }]);
  assert.deepEqual(l.requestSavepoint(2, {}, 10), [], "queued behind the stop");
  ackAll(l, 1, 20);
  assert.deepEqual(brief(l.savepointWritten(1, { path: "/sp" }, 30)), [
    "notify-complete 1",
    "resolve-savepoint r1 1",
    "reject-savepoint r2 SAVEPOINT_FAILED",
    "stop-job 1",
  ]);
  assert.equal(l.phase, "stopping");
  assert.deepEqual(l.tick(1000), []);
  assert.equal(errorOf(l.requestSavepoint(3, {}, 1000), "reject-savepoint").code, "JOB_STOPPING");
  // The tasks did not get the stop: the job must not hang.
  assert.deepEqual(brief(l.commandFailed({ type: "stop-job", checkpointId: 1 }, "worker gone", 1000)), ["fail-job CHECKPOINT_COMMAND_FAILED"]);
});

test("a stop savepoint that fails: without drain sources resume, with drain the job fails", () => {
  const l = lifecycle({ tolerableFailures: 5 });
  l.requestSavepoint(1, { stop: { drain: false } }, 0);
  assert.deepEqual(brief(l.decline(1, "map-0", "busy", 5)), ["reject-savepoint r1 SAVEPOINT_FAILED", "resume-sources", "abort 1"]);
  assert.equal(l.phase, "running");
  assert.deepEqual(brief(l.requestSavepoint(2, { stop: { drain: false } }, 6)), ["trigger 2 stop drain=false"], "a new stop may be asked");

  const d = lifecycle({ tolerableFailures: 5 });
  d.requestSavepoint(1, { stop: { drain: true } }, 0);
  d.requestSavepoint(2, {}, 0);
  const failed = d.decline(1, "map-0", "busy", 5);
  assert.deepEqual(brief(failed), ["reject-savepoint r1 SAVEPOINT_FAILED", "abort 1", "reject-savepoint r2 SAVEPOINT_FAILED", "fail-job SAVEPOINT_FAILED"]);
  assert.equal(errorOf(failed, "fail-job").message, "stop with drain failed: declined by task 'map-0': busy");
  assert.deepEqual(d.tick(10_000), [], "nothing after fail-job");
});

test("the final checkpoint: once every task finished and none is in progress, with the next id; a failure of it fails the job", () => {
  const l = lifecycle();
  assert.deepEqual(brief(l.tick(100)), ["trigger 1"]);
  for (const t of TASKS) assert.deepEqual(l.taskFinished(t, 110), [], "checkpoint 1 is in progress");
  ackAll(l, 1, 120);
  assert.deepEqual(l.manifestCommitted(1, 130), [
    { type: "notify-complete", checkpointId: 1 },
    { type: "retain", checkpointId: 1 },
    { type: "trigger-final", checkpointId: 2, timestampMs: 130 },
  ]);
  assert.equal(l.lastCheckpointId, 2);
  assert.deepEqual(l.tick(10_000), [], "nothing else is triggered");
  assert.deepEqual(brief(ackAll(l, 2, 140)), ["commit-manifest 2 final"]);
  assert.deepEqual(l.acknowledge(2, "map-0", ACK, 141), [], "a late ack does not commit it again");
  assert.deepEqual(brief(l.manifestCommitted(2, 150)), ["notify-complete 2", "retain 2"]);

  const declined = lifecycle({}, ["a", "b"]);
  declined.taskFinished("a", 0);
  assert.deepEqual(brief(declined.taskFinished("b", 0)), ["trigger-final 1"]);
  const e = errorOf(declined.decline(1, "b", "disk full", 1), "fail-job");
  assert.deepEqual([e.code, e.message], ["CHECKPOINT_FAILED", "the final checkpoint of job 'j' failed: disk full"]);

  const manifest = lifecycle({}, ["a"]);
  manifest.taskFinished("a", 0);
  manifest.acknowledge(1, "a", ACK, 1);
  assert.equal(errorOf(manifest.manifestFailed(1, "ENOSPC", 2), "fail-job").code, "CHECKPOINT_FAILED");
});

test("the final checkpoint's statistics are in allStats (not in stats or counts, which metrics read): in progress, then completed or failed, per subtask", () => {
  const l = lifecycle({}, ["a", "b"]);
  l.taskFinished("a", 0);
  l.taskFinished("b", 10);
  const at = (stats: readonly CheckpointStats[]) => stats.map((s) => [s.checkpointId, s.status, s.durationMs, s.acknowledgedTasks, s.bytes, s.failureReason]);
  assert.deepEqual(at(l.allStats()), [[1, "in-progress", undefined, 0, 0, undefined]]);
  l.acknowledge(1, "a", { ...ACK, bytes: 5, asyncMs: 7 }, 15);
  l.acknowledge(1, "a", ACK, 16);
  l.acknowledge(1, "b", ACK, 20);
  l.manifestCommitted(1, 30);
  assert.deepEqual(at(l.allStats()), [[1, "completed", 20, 2, 6, undefined]]);
  assert.deepEqual(l.allStats()[0]!.subtasks.map((s) => [s.taskId, s.ackTimeMs, s.bytes]), [["a", 15, 5], ["b", 20, 1]], "a second ack of a task is ignored");
  assert.equal(l.allStats()[0]!.asyncMs, 7, "the maximum");
  assert.deepEqual([l.stats(), l.counts()], [[], { completed: 0, failed: 0 }]);

  const declined = lifecycle({}, ["a"]);
  declined.taskFinished("a", 0);
  declined.decline(1, "a", "disk full", 4);
  assert.deepEqual(at(declined.allStats()), [[1, "failed", 4, 0, 0, "disk full"]]);
});

test("too many failed checkpoints fail the job (CHECKPOINT_FAILURES), rejecting every request; nothing follows", () => {
  const l = lifecycle({ maxConcurrent: 2 });
  l.tick(100);
  l.requestSavepoint(1, {}, 100);
  l.requestSavepoint(2, {}, 100);
  const failed = l.decline(1, "map-0", "disk full", 110);
  assert.deepEqual(brief(failed), [
    "abort 1",
    "reject-savepoint r1 SAVEPOINT_FAILED",
    "abort 2",
    "reject-savepoint r2 SAVEPOINT_FAILED",
    "fail-job CHECKPOINT_FAILURES",
  ]);
  assert.match(errorOf(failed, "fail-job").message, /^job 'j' failed: 1 consecutive checkpoints failed/);
  assert.equal(errorOf(failed, "reject-savepoint").message, "savepoint 2 failed: the job failed");
  assert.deepEqual(l.tick(10_000), []);
  assert.deepEqual(l.manifestCommitted(2, 10_000), []);
  assert.equal(errorOf(l.requestSavepoint(3, {}, 10_000), "reject-savepoint").message, "cannot take a savepoint: the job has failed");
});

test("a command that throws fails what it was for, instead of being only logged", () => {
  const l = lifecycle({ tolerableFailures: 5 });
  const [trigger] = l.tick(100);
  assert.ok(trigger?.type === "trigger");
  const declined = l.commandFailed(trigger, "enumerator threw", 101);
  assert.deepEqual(declined, [{ type: "abort", checkpointId: 1, reason: "declined by task 'source-0': its barrier could not be sent: enumerator threw" }]);
  assert.equal(l.stats()[0]!.status, "failed");

  l.tick(200);
  const [commit] = ackAll(l, 2, 210);
  assert.ok(commit?.type === "commit-manifest");
  assert.deepEqual(brief(l.commandFailed(commit, "bad handle", 211)), ["abort 2"]);

  l.requestSavepoint(1, {}, 220);
  const [write] = ackAll(l, 3, 230);
  assert.ok(write?.type === "write-savepoint");
  assert.deepEqual(brief(l.commandFailed(write, "EACCES", 231)), ["reject-savepoint r1 SAVEPOINT_FAILED", "abort 3"]);

  assert.deepEqual(l.commandFailed({ type: "abort", checkpointId: 3, reason: "x" }, "gone", 240), [], "a newer barrier supersedes it");
  assert.deepEqual(l.commandFailed({ type: "discard", checkpointId: 1 }, "EBUSY", 240), [], "deletes are best-effort");
  const e = errorOf(l.commandFailed({ type: "notify-complete", checkpointId: 2 }, "worker gone", 250), "fail-job");
  assert.deepEqual([e.code, e.message], ["CHECKPOINT_COMMAND_FAILED", "could not notify the tasks of job 'j' that checkpoint 2 completed: worker gone"]);
  assert.equal(l.phase, "failed");
});

// ---------------------------------------------------------------------------------------------
// Properties: random event sequences, invariants checked after every step
// ---------------------------------------------------------------------------------------------

interface CheckpointSeen {
  readonly isSavepoint: boolean;
  readonly requestId: number | undefined;
  ended: "completed" | "aborted" | undefined;
  commitRequested: boolean;
  /** manifestCommitted or savepointWritten fed for it (the result, for a savepoint). */
  committed: Written | true | undefined;
  notified: boolean;
}

interface RequestSeen {
  readonly stop: SavepointStop | undefined;
  readonly requestedAtMs: number;
  checkpointId: number | undefined;
  ended: "resolved" | "rejected" | undefined;
}

/** Tracks what the commands said so far, and checks every new one against it. */
class Observer {
  readonly checkpoints = new Map<number, CheckpointSeen>();
  readonly requests = new Map<number, RequestSeen>();
  readonly finished = new Set<string>();
  finalId: number | undefined;
  finalCommitRequested = false;
  finalCommitted = false;
  lastNotified = 0;
  phase: "running" | "stopping" | "failed" | "stopped" = "running";
  readonly emitted: Command[] = [];

  constructor(
    readonly tasks: readonly string[],
    readonly maxConcurrent: number,
    readonly atLeastOnce: boolean,
  ) {}

  inProgress(): number[] {
    return [...this.checkpoints].filter(([, c]) => c.ended === undefined).map(([id]) => id);
  }

  outstanding(): [number, RequestSeen][] {
    return [...this.requests].filter(([, r]) => r.ended === undefined);
  }

  /** `newRequest`: the request made by this input, if any (the only one that may be refused after the end). */
  observe(commands: readonly Command[], now: number, where: () => string, newRequest?: number): void {
    const batch: Command[] = [];
    const at = (c: Command) => `${where()}: ${brief([c])[0]} after [${brief(batch)}]`;
    for (const c of commands) {
      if (this.phase === "failed" || this.phase === "stopped") {
        assert.ok(c.type === "reject-savepoint" && c.requestId === newRequest, `${at(c)}: nothing after fail-job or stop()`);
      }
      if (this.phase === "stopping") {
        assert.ok(c.type === "fail-job" || (c.type === "reject-savepoint" && c.requestId === newRequest), `${at(c)}: only a failure after stop-job`);
      }
      switch (c.type) {
        case "trigger": {
          const newest = Math.max(0, ...this.checkpoints.keys());
          assert.ok(c.checkpointId > newest, `${at(c)}: trigger ids increase`);
          assert.equal(this.finalId, undefined, `${at(c)}: nothing is triggered after the final checkpoint`);
          assert.equal(c.timestampMs, now);
          let requestId: number | undefined;
          if (c.isSavepoint) {
            // Requests are triggered in request order.
            const waiting = this.outstanding().find(([, r]) => r.checkpointId === undefined);
            assert.ok(waiting !== undefined, `${at(c)}: a savepoint without a waiting request`);
            [requestId] = waiting;
            waiting[1].checkpointId = c.checkpointId;
            assert.deepEqual(c.stop, waiting[1].stop, `${at(c)}: the barrier carries the request's stop`);
          } else {
            assert.equal(c.stop, undefined);
          }
          this.checkpoints.set(c.checkpointId, { isSavepoint: c.isSavepoint, requestId, ended: undefined, commitRequested: false, committed: undefined, notified: false });
          assert.ok(this.inProgress().length <= this.maxConcurrent, `${at(c)}: at most maxConcurrent in progress`);
          break;
        }
        case "trigger-final":
          assert.equal(this.finalId, undefined, `${at(c)}: one final checkpoint`);
          assert.equal(this.finished.size, this.tasks.length, `${at(c)}: only once every task finished`);
          assert.deepEqual(this.inProgress(), [], `${at(c)}: only with nothing in progress`);
          assert.equal(c.checkpointId, Math.max(0, ...this.checkpoints.keys()) + 1, `${at(c)}: the next id`);
          this.finalId = c.checkpointId;
          break;
        case "commit-manifest":
          if (c.isFinal) {
            assert.ok(c.checkpointId === this.finalId && !this.finalCommitRequested, at(c));
            this.finalCommitRequested = true;
          } else {
            const cp = this.checkpoints.get(c.checkpointId);
            assert.ok(cp !== undefined && !cp.isSavepoint && cp.ended === undefined && !cp.commitRequested, at(c));
            cp.commitRequested = true;
          }
          assert.equal(c.acks.size, this.tasks.length, `${at(c)}: every task acked`);
          break;
        case "write-savepoint": {
          const cp = this.checkpoints.get(c.checkpointId);
          assert.ok(cp !== undefined && cp.isSavepoint && cp.ended === undefined && !cp.commitRequested && cp.requestId === c.requestId, at(c));
          cp.commitRequested = true;
          break;
        }
        case "notify-complete": {
          assert.ok(c.checkpointId > this.lastNotified, `${at(c)}: notify-complete ids strictly increase`);
          this.lastNotified = c.checkpointId;
          if (c.checkpointId === this.finalId) {
            assert.ok(this.finalCommitted, `${at(c)}: after its manifest`);
            break;
          }
          const cp = this.checkpoints.get(c.checkpointId);
          assert.ok(cp !== undefined && cp.ended === undefined && cp.committed !== undefined, `${at(c)}: only once its manifest or savepoint is written`);
          if (cp.isSavepoint) {
            assert.notEqual(this.requests.get(cp.requestId!)!.stop, undefined, `${at(c)}: an intermediate savepoint is never announced`);
          } else {
            cp.ended = "completed";
          }
          cp.notified = true;
          break;
        }
        case "retain": {
          const last = batch.at(-1);
          assert.ok(last?.type === "notify-complete" && last.checkpointId === c.checkpointId, `${at(c)}: right after its notify-complete`);
          assert.ok(c.checkpointId === this.finalId || this.checkpoints.get(c.checkpointId)?.isSavepoint === false, `${at(c)}: never a savepoint`);
          break;
        }
        case "discard": {
          const cp = this.checkpoints.get(c.checkpointId);
          assert.ok(cp !== undefined && !cp.isSavepoint && cp.ended === "completed", `${at(c)}: only completed checkpoints`);
          break;
        }
        case "abort": {
          const cp = this.checkpoints.get(c.checkpointId);
          assert.ok(cp !== undefined && cp.ended === undefined, `${at(c)}: aborts one in progress, once`);
          cp.ended = "aborted";
          if (cp.isSavepoint) {
            const rejected = batch.some((b) => b.type === "reject-savepoint" && b.requestId === cp.requestId);
            assert.ok(rejected, `${at(c)}: its request is rejected with it`);
          }
          break;
        }
        case "resume-sources": {
          const r = batch.at(-1);
          assert.ok(r?.type === "reject-savepoint", `${at(c)}: after a stop savepoint failed`);
          const stop = this.requests.get(r.requestId)!.stop;
          assert.ok(stop !== undefined && !stop.drain, `${at(c)}: only without drain`);
          break;
        }
        case "stop-job": {
          const cp = this.checkpoints.get(c.checkpointId);
          assert.ok(cp?.isSavepoint === true && cp.notified && this.requests.get(cp.requestId!)?.stop !== undefined, `${at(c)}: only after the notify-complete of its stop savepoint`);
          assert.equal(this.requests.get(cp.requestId!)!.ended, "resolved");
          this.phase = "stopping";
          break;
        }
        case "fail-job":
          this.phase = "failed";
          break;
        case "resolve-savepoint": {
          const r = this.requests.get(c.requestId);
          assert.ok(r !== undefined && r.ended === undefined, `${at(c)}: a request ends once`);
          assert.equal(r.checkpointId, c.checkpointId);
          const cp = this.checkpoints.get(c.checkpointId)!;
          assert.ok(cp.ended === undefined && cp.committed !== undefined && cp.committed !== true, `${at(c)}: only once written`);
          assert.deepEqual(c.result, cp.committed, `${at(c)}: with what was written`);
          if (r.stop !== undefined) assert.ok(cp.notified, `${at(c)}: a stop savepoint after its notify-complete`);
          r.ended = "resolved";
          cp.ended = "completed";
          break;
        }
        case "reject-savepoint": {
          const r = this.requests.get(c.requestId);
          assert.ok(r !== undefined && r.ended === undefined, `${at(c)}: a request ends once`);
          if (c.error.message.startsWith("no savepoint slot")) {
            assert.ok(r.checkpointId === undefined && now - r.requestedAtMs >= SAVEPOINT_QUEUE_TIMEOUT_MS, `${at(c)}: expires only untriggered, after 60 s`);
          }
          if (c.error.code === "SAVEPOINT_NEEDS_ALIGNMENT") assert.ok(this.atLeastOnce);
          if (this.atLeastOnce && this.phase !== "stopped") assert.equal(c.error.code, "SAVEPOINT_NEEDS_ALIGNMENT", at(c));
          r.ended = "rejected";
          break;
        }
      }
      batch.push(c);
      this.emitted.push(c);
    }
    // A stop savepoint that failed without drain: sources resume, unless the job fails anyway.
    for (const c of batch) {
      if (c.type !== "reject-savepoint" || !c.error.message.startsWith("savepoint ")) continue;
      const stop = this.requests.get(c.requestId)!.stop;
      if (stop === undefined || stop.drain || batch.some((b) => b.type === "fail-job")) continue;
      assert.ok(batch.some((b) => b.type === "resume-sources"), `${where()}: sources resume after stop savepoint ${c.requestId} failed`);
    }
    // After every step.
    const outstanding = this.outstanding();
    assert.ok(outstanding.filter(([, r]) => r.stop !== undefined).length <= 1, `${where()}: at most one stop request in flight`);
    if (this.phase !== "running" || this.atLeastOnce) assert.deepEqual(outstanding, [], `${where()}: no request outstanding`);
  }

  /** After a tick that the machine took: no untriggered request is overdue. */
  checkExpired(now: number, where: () => string): void {
    if (this.phase !== "running") return;
    for (const [id, r] of this.outstanding()) {
      if (r.checkpointId === undefined) assert.ok(now - r.requestedAtMs < SAVEPOINT_QUEUE_TIMEOUT_MS, `${where()}: request ${id} overdue`);
    }
  }
}

const configArb = fc.record({
  intervalMs: fc.integer({ min: 50, max: 5000 }),
  timeoutMs: fc.integer({ min: 500, max: 200_000 }),
  minPauseMs: fc.integer({ min: 0, max: 500 }),
  maxConcurrent: fc.integer({ min: 1, max: 3 }),
  tolerableFailures: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constant(Infinity)),
  retained: fc.integer({ min: 1, max: 3 }),
  mode: fc.constantFrom("exactly-once", "exactly-once", "exactly-once", "exactly-once", "at-least-once"),
});

type Step =
  | { readonly kind: "tick"; readonly advanceMs: number }
  | { readonly kind: "request"; readonly stop: SavepointStop | undefined }
  | { readonly kind: "ack" | "decline"; readonly id: number; readonly task: string }
  | { readonly kind: "finish"; readonly task: string }
  | { readonly kind: "committed" | "manifest-failed" | "written" | "write-failed"; readonly id: number }
  | { readonly kind: "command-failed"; readonly command: Command }
  | { readonly kind: "stop" };

/** The steps to choose from now, by kind; ids and tasks mostly the ones that make progress. */
function candidates(o: Observer, n: number): Step[][] {
  const pick = <T>(xs: readonly T[], k: number): T | undefined => (xs.length === 0 ? undefined : xs[k % xs.length]);
  const task = pick(o.tasks, n)!;
  const live = [...o.inProgress(), ...(o.finalId !== undefined && !o.finalCommitRequested ? [o.finalId] : [])];
  // Sometimes an id that has ended, or none at all: those messages must be ignored.
  const id = n % 7 === 0 ? (n % 11) + 1 : (pick(live, n >> 3) ?? (n % 5) + 1);
  const committing = [...o.checkpoints].filter(([, c]) => c.commitRequested && c.ended === undefined && c.committed === undefined);
  const manifests = [...committing.filter(([, c]) => !c.isSavepoint).map(([i]) => i), ...(o.finalCommitRequested && !o.finalCommitted ? [o.finalId!] : [])];
  const savepoints = committing.filter(([, c]) => c.isSavepoint).map(([i]) => i);
  const failable = o.emitted.filter((c) => ["trigger", "trigger-final", "commit-manifest", "write-savepoint", "notify-complete", "resume-sources", "stop-job", "abort"].includes(c.type));
  const stops = [undefined, undefined, { drain: false }, { drain: true }] as const;
  const groups: Step[][] = [
    [{ kind: "tick", advanceMs: n % 300 }],
    [{ kind: "tick", advanceMs: n % 13 === 0 ? 20_000 + (n % 50_000) : n % 3000 }],
    [{ kind: "request", stop: stops[n % 4] }],
    [{ kind: "ack", id, task }],
    [{ kind: "ack", id, task }],
    [{ kind: "ack", id, task }],
    [{ kind: "decline", id, task }],
    // Rarer: once every task finished, no savepoint can be taken.
    n % 4 === 0 ? [{ kind: "finish", task }] : [],
    manifests.length === 0 ? [] : [{ kind: n % 5 === 0 ? "manifest-failed" : "committed", id: pick(manifests, n >> 2)! }],
    manifests.length === 0 ? [] : [{ kind: "committed", id: pick(manifests, n >> 2)! }],
    savepoints.length === 0 ? [] : [{ kind: n % 5 === 0 ? "write-failed" : "written", id: pick(savepoints, n >> 2)! }],
    savepoints.length === 0 ? [] : [{ kind: "written", id: pick(savepoints, n >> 2)! }],
    n % 9 === 0 && failable.length > 0 ? [{ kind: "command-failed", command: pick(failable, n >> 4)! }] : [],
    n % 97 === 0 ? [{ kind: "stop" }] : [],
  ];
  return groups;
}

function runSteps(l: CheckpointLifecycle<Written>, o: Observer, choices: readonly number[]): { now: number; path: string[] } {
  let now = 0;
  let nextRequest = 1;
  let written = 0;
  const path: string[] = [];
  for (const choice of choices) {
    const groups = candidates(o, choice >> 4).filter((g) => g.length > 0);
    const step = groups[choice % groups.length]![0]!;
    path.push(step.kind === "command-failed" ? `command-failed ${brief([step.command])[0]}` : JSON.stringify(step));
    const where = () => `after ${path.length} steps: ${path.slice(-12).join(", ")}`;
    let commands: Command[];
    let newRequest: number | undefined;
    switch (step.kind) {
      case "tick":
        now += step.advanceMs;
        commands = l.tick(now);
        break;
      case "request":
        newRequest = nextRequest++;
        o.requests.set(newRequest, { stop: step.stop, requestedAtMs: now, checkpointId: undefined, ended: undefined });
        commands = l.requestSavepoint(newRequest, { stop: step.stop }, now);
        break;
      case "ack":
        commands = l.acknowledge(step.id, step.task, ACK, now);
        break;
      case "decline":
        commands = l.decline(step.id, step.task, "random", now);
        break;
      case "finish":
        o.finished.add(step.task);
        commands = l.taskFinished(step.task, now);
        break;
      case "committed": {
        const cp = o.checkpoints.get(step.id);
        if (cp !== undefined) cp.committed = true;
        else if (step.id === o.finalId) o.finalCommitted = true;
        commands = l.manifestCommitted(step.id, now);
        break;
      }
      case "written": {
        const result = { path: `/sp-${++written}` };
        o.checkpoints.get(step.id)!.committed = result;
        commands = l.savepointWritten(step.id, result, now);
        break;
      }
      case "manifest-failed":
        commands = l.manifestFailed(step.id, "random", now);
        break;
      case "write-failed":
        commands = l.savepointFailed(step.id, "random", now);
        break;
      case "command-failed":
        commands = l.commandFailed(step.command, "random", now);
        break;
      case "stop":
        commands = l.stop();
        break;
    }
    o.observe(commands, now, where, newRequest);
    if (step.kind === "stop") o.phase = "stopped";
    if (step.kind === "tick") o.checkExpired(now, where);
    assert.equal(l.phase, o.phase, `${where()}: phase`);
  }
  return { now, path };
}

test("random event sequences keep the lifecycle's invariants, and every request ends exactly once", () => {
  // How often each command came, so that a walk that stopped reaching a rule fails too.
  const seen = new Map<string, number>();
  fc.assert(
    fc.property(configArb, fc.integer({ min: 1, max: 3 }), fc.array(fc.nat(), { maxLength: 250, size: "max" }), (config, numTasks, choices) => {
      const tasks = Array.from({ length: numTasks }, (_, i) => `t${i}`);
      const l = new CheckpointLifecycle<Written>(resolveCheckpointConfig(config), { jobName: "j", tasks, firstCheckpointId: 1, now: 0 });
      const o = new Observer(tasks, config.maxConcurrent, config.mode === "at-least-once");
      const { now, path } = runSteps(l, o, choices);
      const where = () => `at the end of ${path.length} steps: ${path.slice(-12).join(", ")}`;
      // Liveness: a long tick expires every waiting request; stop() ends every other one.
      o.observe(l.tick(now + SAVEPOINT_QUEUE_TIMEOUT_MS), now + SAVEPOINT_QUEUE_TIMEOUT_MS, where);
      o.checkExpired(now + SAVEPOINT_QUEUE_TIMEOUT_MS, where);
      o.observe(l.stop(), now, where);
      o.phase = "stopped";
      for (const [id, r] of o.requests) assert.notEqual(r.ended, undefined, `${where()}: request ${id} ended`);
      o.observe(l.tick(now + 10 * SAVEPOINT_QUEUE_TIMEOUT_MS), now, where);
      assert.ok(l.lastCheckpointId >= Math.max(0, ...o.checkpoints.keys(), o.finalId ?? 0));
      for (const c of o.emitted) {
        const key = c.type === "reject-savepoint" || c.type === "fail-job" ? `${c.type} ${c.error.code} ${c.error.message.split(" ")[0]}` : c.type;
        seen.set(key, (seen.get(key) ?? 0) + 1);
      }
    }),
    { numRuns: 600, includeErrorInReport: true },
  );
  const rare = [
    "stop-job",
    "resume-sources",
    "resolve-savepoint",
    "trigger-final",
    "discard",
    "fail-job CHECKPOINT_FAILURES job",
    "fail-job SAVEPOINT_FAILED stop",
    "fail-job CHECKPOINT_FAILED the",
    "fail-job CHECKPOINT_COMMAND_FAILED could",
    "reject-savepoint SAVEPOINT_FAILED no",
    "reject-savepoint JOB_STOPPING job",
  ];
  for (const key of rare) assert.ok((seen.get(key) ?? 0) >= 5, `${key} came ${seen.get(key) ?? 0} times: ${JSON.stringify([...seen])}`);
});

test("random runs in which every task finishes reach the final checkpoint, the last id", () => {
  let finals = 0;
  fc.assert(
    fc.property(configArb, fc.array(fc.nat(), { maxLength: 120, size: "max" }), (config, choices) => {
      const tasks = ["a", "b"];
      const l = new CheckpointLifecycle<Written>(resolveCheckpointConfig({ ...config, mode: "exactly-once" }), { jobName: "j", tasks, firstCheckpointId: 1, now: 0 });
      const o = new Observer(tasks, config.maxConcurrent, false);
      const { now, path } = runSteps(l, o, choices);
      const where = () => `after ${path.join(", ")}`;
      if (o.phase !== "running") return;
      for (const t of tasks) {
        o.finished.add(t);
        o.observe(l.taskFinished(t, now), now, where);
      }
      // Whatever is in progress ends by its timeout at the latest; then the final checkpoint comes.
      const later = now + config.timeoutMs;
      o.observe(l.tick(later), later, where);
      if (o.phase !== "running") return;
      assert.notEqual(o.finalId, undefined, `${where()}: the final checkpoint was triggered`);
      o.observe(ackAll(l, o.finalId!, later, tasks), later, where);
      o.finalCommitted = true;
      o.observe(l.manifestCommitted(o.finalId!, later), later, where);
      assert.equal(o.lastNotified, o.finalId);
      finals++;
    }),
    { numRuns: 300, includeErrorInReport: true },
  );
  assert.ok(finals > 50, `only ${finals} runs reached the final checkpoint`);
});
