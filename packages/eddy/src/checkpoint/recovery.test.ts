import { test } from "node:test";
import assert from "node:assert/strict";
import { RecoveryTracker, resolveRecovery, restartability, type RecoveryPoint } from "./recovery.ts";

const IDS = [1, 2, 3, 4, 5, 6];

/** Every subset of IDS, as the ids that are restorable (complete and verifying). */
function* subsets(): Generator<number[]> {
  for (let mask = 0; mask < 1 << IDS.length; mask++) yield IDS.filter((_, i) => (mask & (1 << i)) !== 0);
}

const newest = (ids: readonly number[], atLeast: number): number | undefined => {
  const ok = ids.filter((id) => id >= atLeast);
  return ok.length === 0 ? undefined : Math.max(...ok);
};

test("recovery: over every small case, never behind committed output (unless allowed), never another run's checkpoint, always the newest it may take", async () => {
  let cases = 0;
  for (const firstOwn of [1, 2, 3, 4]) {
    // Committed ids come from this run: at least its first id.
    for (const committed of [undefined, ...IDS.filter((id) => id >= firstOwn)]) {
      for (const allow of [false, true]) {
        for (const restorable of subsets()) {
          const tracker = new RecoveryTracker(allow);
          tracker.attemptStarted(firstOwn);
          tracker.attemptStarted(firstOwn + 10); // a later attempt's first id does not move the run's
          if (committed !== undefined) {
            tracker.completionNotified(committed - 1 >= firstOwn ? committed - 1 : committed);
            tracker.completionNotified(committed);
          }
          const at = `firstOwn ${firstOwn}, committed ${committed}, allow ${allow}, restorable [${restorable}]`;
          const point: RecoveryPoint<number> = await resolveRecovery(tracker.plan(), async (atLeast) => newest(restorable, atLeast));
          cases++;
          const ours = newest(restorable, firstOwn);
          const aheadOfCommitted = newest(restorable, Math.max(firstOwn, committed ?? 0));
          if (point.kind === "checkpoint") {
            assert.ok(point.checkpoint >= firstOwn, `${at}: another run's checkpoint ${point.checkpoint}`);
            if (!allow && committed !== undefined) assert.ok(point.checkpoint >= committed, `${at}: behind committed`);
            assert.equal(point.behindCommitted, committed !== undefined && point.checkpoint < committed, at);
          }
          if (committed === undefined) {
            assert.deepEqual(point, ours === undefined ? { kind: "start", behindCommitted: false } : { kind: "checkpoint", checkpoint: ours, behindCommitted: false }, at);
          } else if (aheadOfCommitted !== undefined) {
            assert.deepEqual(point, { kind: "checkpoint", checkpoint: aheadOfCommitted, behindCommitted: false }, at);
          } else if (!allow) {
            assert.deepEqual(point, { kind: "refuse", committedId: committed }, at);
          } else {
            assert.deepEqual(point, ours === undefined ? { kind: "start", behindCommitted: true } : { kind: "checkpoint", checkpoint: ours, behindCommitted: true }, at);
          }
        }
      }
    }
  }
  assert.equal(cases, 2 * 64 * (7 + 6 + 5 + 4));
});

test("recovery before any attempt chose its ids restores nothing of the directory: the start", async () => {
  const point = await resolveRecovery(new RecoveryTracker(false).plan(), async (atLeast) => newest(IDS, atLeast));
  assert.deepEqual(point, { kind: "start", behindCommitted: false });
});

test("restartability: cancellations, configuration errors, running out of memory and a damaged named snapshot are not restarted", () => {
  assert.equal(restartability({ code: "USER_FUNCTION_FAILED", domain: "user", cancelled: false, restoringNamedSnapshot: false }).restartable, true);
  assert.equal(restartability({ code: "WORKER_DIED", domain: "internal", cancelled: false, restoringNamedSnapshot: false }).restartable, true);
  assert.equal(restartability({ code: undefined, domain: undefined, cancelled: false, restoringNamedSnapshot: false }).restartable, true);
  assert.equal(restartability({ code: "USER_FUNCTION_FAILED", domain: "user", cancelled: true, restoringNamedSnapshot: false }).restartable, false);
  assert.equal(restartability({ code: "JOB_CANCELLED", domain: "user", cancelled: false, restoringNamedSnapshot: false }).restartable, false);
  assert.equal(restartability({ code: "NON_RESTORED_STATE", domain: "config", cancelled: false, restoringNamedSnapshot: false }).restartable, false);
  const oom = restartability({ code: "WORKER_OUT_OF_MEMORY", domain: "user", cancelled: false, restoringNamedSnapshot: false });
  assert.ok(!oom.restartable && oom.report && /out of memory/.test(oom.reason));
  // A damaged file while restoring a snapshot the user named: never replaced by an older one.
  const damaged = restartability({ code: "CHECKPOINT_CORRUPT", domain: "external", cancelled: false, restoringNamedSnapshot: true });
  assert.ok(!damaged.restartable && damaged.report && /named to restore from is damaged/.test(damaged.reason));
  assert.equal(restartability({ code: "CHECKPOINT_MISSING", domain: "external", cancelled: false, restoringNamedSnapshot: true }).restartable, false);
  // The same fault in the run's own checkpoint (recovery picks another, by the rules above).
  assert.equal(restartability({ code: "CHECKPOINT_CORRUPT", domain: "external", cancelled: false, restoringNamedSnapshot: false }).restartable, true);
  const cancelled = restartability({ code: "JOB_CANCELLED", domain: "user", cancelled: false, restoringNamedSnapshot: false });
  assert.ok(!cancelled.restartable && !cancelled.report, "a cancellation ends quietly");
});
