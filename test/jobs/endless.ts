/**
 * A job that runs until it is stopped from outside: for the control API tests (test/control-cli.test.ts).
 */
import { defineJob } from "eddy";

export default defineJob("endless", (env) => {
  env
    .fromSequence(1, Number.MAX_SAFE_INTEGER)
    .filter((n: number) => n < 0)
    .print();
});
