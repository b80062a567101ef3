import assert from "node:assert/strict";
import { test } from "node:test";
import type { CheckpointStats } from "../checkpoint/coordinator.ts";
import { endedAttemptCheckpoints } from "./attempt-supervisor.ts";

const stats = (checkpointId: number, status: CheckpointStats["status"]): CheckpointStats => ({
  checkpointId,
  isSavepoint: false,
  triggerTimeMs: checkpointId * 100,
  status,
  durationMs: status === "in-progress" ? undefined : 10,
  acknowledgedTasks: 1,
  totalTasks: 2,
  syncMs: 0,
  asyncMs: 0,
  alignmentMs: 0,
  bytes: 0,
  failureReason: status === "failed" ? "declined" : undefined,
  subtasks: [],
});

test("an attempt's checkpoint in progress when it ended is failed in the history and in the counts (as Flink counts aborted pending checkpoints); its final checkpoint is listed, never counted", () => {
  const counted = [stats(1, "completed"), stats(2, "failed"), stats(3, "in-progress")];
  const final = stats(4, "in-progress");
  const ended = endedAttemptCheckpoints([...counted, final], counted, { completed: 1, failed: 1 });
  assert.deepEqual(
    ended.history.map((s) => [s.checkpointId, s.status, s.failureReason]),
    [
      [1, "completed", undefined],
      [2, "failed", "declined"],
      [3, "failed", "its attempt ended"],
      [4, "failed", "its attempt ended"],
    ],
  );
  assert.deepEqual(ended.counts, { completed: 1, failed: 2 });
  // Nothing in progress: the attempt's own counts.
  assert.deepEqual(endedAttemptCheckpoints(counted.slice(0, 2), counted.slice(0, 2), { completed: 1, failed: 1 }).counts, { completed: 1, failed: 1 });
});
