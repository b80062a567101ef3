/**
 * A job whose map never returns once it reaches record EDDY_STUCK_AT (default 500): for the task
 * watchdog and cancellation tests (test/failures.test.ts).
 */
import { defineJob } from "eddy";

const stuckAt = Number(process.env.EDDY_STUCK_AT ?? 500);

function spinForever(n: number): number {
  let x = n;
  for (;;) x = (x * 31 + 7) % 1_000_003; // the line the watchdog must name
}

export default defineJob("stuck", (env) => {
  env
    .fromSequence(1, 1_000)
    .map((n: number) => (n === stuckAt ? spinForever(n) : n))
    .name("Spin")
    .print();
});
