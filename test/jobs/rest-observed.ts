/**
 * The job of the REST API tests (test/rest-api.test.ts), in a module of its own so worker threads
 * can import it. Its graph and counts are known in advance:
 *
 *   Numbers (source, 2 splits) ─rebalance─▶ Copy ─hash─▶ Fail once ─forward, chained─▶ Out
 *                              │                          └─side output "odd"─▶ Odd sink
 *                              └─broadcast─▶ Every ─forward─▶ Every sink
 *
 * Numbers 1..REST_RECORDS, paced so the job runs for a while. With EDDY_REST_MARKER (a file that
 * does not exist yet), "Fail once" throws once, at record REST_FAIL_AT, and creates the file, so
 * the job fails once and recovers from its newest checkpoint.
 */
import { writeFileSync } from "node:fs";
import { defineJob, OutputTag, WatermarkStrategy, type KeyedProcessFunction } from "eddy";
import { collectSink } from "eddy/testing";
import { pacedNumbers } from "./paced-source.ts";

export const REST_RECORDS = Number(process.env.EDDY_REST_RECORDS ?? 2_000);
export const REST_FAIL_AT = 700;
export const ODD = new OutputTag<number>("odd");

/** Passes each number on, its odd ones to the side output too; throws once at REST_FAIL_AT when armed. */
function failOnce(): KeyedProcessFunction<number, number, number> {
  const marker = process.env.EDDY_REST_MARKER;
  return {
    processElement(n, ctx, out) {
      if (n === REST_FAIL_AT && marker !== undefined) {
        let fire = true;
        try {
          writeFileSync(marker, "fired", { flag: "wx" });
        } catch {
          fire = false;
        }
        if (fire) throw new Error(`injected REST fault at record ${n}`);
      }
      if (n % 2 === 1) ctx.output(ODD, n);
      out.collect(n);
    },
  };
}

export const restJob = defineJob("rest-observed", (env) => {
  const numbers = env
    .fromSource(pacedNumbers({ records: REST_RECORDS, splits: 2, idPrefix: "rest", perPoll: 10, pauseMs: Number(process.env.EDDY_REST_PAUSE_MS ?? 8) }), WatermarkStrategy.forMonotonousTimestamps<number>(), "Numbers")
    .uid("numbers");
  const passed = numbers
    .rebalance()
    .map((n) => n)
    .name("Copy")
    .uid("copy")
    .keyBy((n) => n % 4)
    .process(failOnce)
    .name("Fail once")
    .uid("fail-once");
  passed.sinkTo(collectSink("rest-out"), "Out");
  passed.getSideOutput(ODD).sinkTo(collectSink("rest-odd"), "Odd sink");
  numbers.broadcast().map((n) => n).name("Every").uid("every").sinkTo(collectSink("rest-every"), "Every sink");
});
