import { test } from "node:test";
import assert from "node:assert/strict";
import { SystemClock } from "./clock.ts";

test("a processing-time timer further away than setTimeout can wait neither fires early nor warns", async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => void warnings.push(w.name);
  process.on("warning", onWarning);
  try {
    let fired = false;
    const clock = new SystemClock();
    const scheduled = clock.schedule(Date.now() + 30 * 24 * 3600 * 1000, () => (fired = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(fired, false);
    scheduled.cancel();
    assert.deepEqual(warnings, [], "no TimeoutOverflowWarning");
  } finally {
    process.off("warning", onWarning);
  }
});
