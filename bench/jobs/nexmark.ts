/**
 * The job measured by bench/nexmark.ts: the Nexmark query named by EDDY_BENCH_NEXMARK_QUERY
 * (bench/nexmark/queries.ts), ending in a sink that discards records after folding them into a
 * count and checksum. Exported at the module's top level so worker threads can rebuild it
 * (docs/design/architecture.md, "A job is a module"); the query name and the NEXMARK_* settings are
 * environment variables read when the job is built, which worker threads inherit. One job for all
 * queries, so adding a query to the bench is one table entry.
 */
import { defineJob } from "eddy";
import { benchQueryNamed } from "../nexmark/queries.ts";

export const QUERY_ENV = "EDDY_BENCH_NEXMARK_QUERY";

export const nexmarkQuery = defineJob("bench-nexmark", (env) => {
  const name = process.env[QUERY_ENV];
  if (name === undefined) throw new RangeError(`${QUERY_ENV} is not set`);
  benchQueryNamed(name).buildWithSink(env);
});
