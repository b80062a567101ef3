/**
 * Runs the no-codegen job (no-codegen.ts) inline and on two worker threads, and prints as one JSON
 * line whether this thread can compile code from strings and what both runs produced. The test
 * starts it with `node --disallow-code-generation-from-strings`.
 */
import { runJob, type RunOptions } from "eddy/testing";
import { canCompile, finalRows, noCodegen, type Row } from "./no-codegen.ts";

async function run(options: RunOptions): Promise<{ count: number; fours: number; final: Row[] }> {
  const handle = runJob(noCodegen, options);
  await handle.done;
  const rows = handle.collected("out") as Row[];
  return { count: rows.length, fours: handle.collected("fours").length, final: finalRows(rows) };
}

const inline = await run({ parallelism: 1 });
const threads = await run({ parallelism: 2, mode: "threads" });
process.stdout.write(JSON.stringify({ canCompile: canCompile(), inline, threads }) + "\n");
