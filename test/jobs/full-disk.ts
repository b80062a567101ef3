/**
 * A job whose disk state outgrows its device, run by test/disk-state.test.ts in a child process
 * under a file size limit (`ulimit -f`: the store file cannot grow past it, as on a full disk,
 * while the small checkpoint files can be written). Every record adds a key with a 200-character
 * value (slowed to 20 records per ms so checkpoints complete before the store is full); inline,
 * checkpoints every 20 ms, two restarts. Prints one JSON line: how the job ended, its restarts and
 * the checkpoints each restart restored.
 *
 *   node -C eddy-source --import tsx test/jobs/full-disk.ts <dir>
 */
import { defineJob, ValueStateDescriptor } from "eddy";
import { collectSink, runJob } from "eddy/testing";

const root = process.argv[2];
if (root === undefined) throw new Error("usage: full-disk.ts <dir>");
const sleeper = new Int32Array(new SharedArrayBuffer(4));
const VALUE = new ValueStateDescriptor<string>("v");

const job = defineJob("full-disk", (env) => {
  env
    .fromSequence(1, 2_000_000)
    .keyBy((n: number) => n)
    .process<number>({
      processElement(n, ctx, out) {
        if (n % 20 === 0) Atomics.wait(sleeper, 0, 0, 1);
        ctx.getState(VALUE).update("x".repeat(200));
        if (n % 100_000 === 0) out.collect(n);
      },
    })
    .uid("grow")
    .sinkTo(collectSink<number>("out"));
});

const warnings: string[] = [];
const note = (message: string): void => void warnings.push(message);
const run = runJob(job, {
  mode: "inline",
  checkpointing: { intervalMs: 20 },
  checkpointDir: `${root}/checkpoints`,
  jobId: "full-disk",
  restartStrategy: { type: "fixed-delay", attempts: 2, delayMs: 0 },
  config: { "state.backend": "disk", "state.backend.disk.dir": `${root}/state`, "state.backend.disk.cache-size": "1000" },
  logger: { debug: () => {}, info: () => {}, warn: note, error: note },
});
let outcome: { code?: unknown; message: string };
try {
  await run.done;
  outcome = { message: "finished" };
} catch (e) {
  outcome = { code: (e as { code?: unknown }).code, message: e instanceof Error ? e.message : String(e) };
}
console.log(JSON.stringify({ outcome, restarts: run.restarts, restoredFrom: run.restoredFrom, warnings }));
