/**
 * Runs job.ts on worker threads and prints the `#variant` the main thread and the workers
 * resolved, as JSON (test/conditions.test.ts starts it with and without the condition).
 */
import { runJob } from "eddy/testing";
import variant from "#variant";
import job from "./job.ts";

const handle = runJob(job, { mode: "threads", parallelism: 2 });
await handle.done;
const out = handle.collected<string>("out");
process.stdout.write(JSON.stringify({ main: variant, workers: [...new Set(out.map((s) => s.split(":")[0]))], records: out.length }));
