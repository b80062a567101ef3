/**
 * The jobs of the PostgreSQL CDC tests (test/postgres-cdc.test.ts), set by the environment (read
 * when each thread builds the job):
 * - EDDY_CDC_URL, EDDY_CDC_SLOT, EDDY_CDC_PUBLICATION, EDDY_CDC_TABLES (comma-separated);
 * - EDDY_CDC_MODE: "collect": every change record to the collect sink "changes";
 *   "aggregate": per `grp` of the orders table, the count and the sum of `amount` of its rows,
 *   kept from the changelog (+I/+U add, -U/-D subtract) and upserted into EDDY_CDC_RESULT (the
 *   group's row deleted when its count is 0);
 * - EDDY_CDC_FAULT: `{ kind: "exit" | "process", atRecord, marker }`: fires once per marker file,
 *   at the atRecord-th change a subtask of the fault's map sees;
 * - EDDY_CDC_SPLIT_ROWS / EDDY_CDC_FETCH_ROWS: the snapshot's split and fetch sizes;
 * - EDDY_CDC_HOLD: the job runs slowly (1 ms every 10 changes) until this file exists.
 */
import { defineJob, WatermarkStrategy } from "eddy";
import { isAccumulate, PostgresCdcSource, PostgresSink, type ChangeRecord } from "eddy/postgres";
import { collectSink } from "eddy/testing";
import { existsSync } from "node:fs";
import { fireOnce, recordFaultFrom } from "./fault-markers.ts";

const sleeper = new Int32Array(new SharedArrayBuffer(4));

export interface GroupTotal {
  readonly grp: number;
  readonly cnt: number;
  readonly total: number;
}

export const postgresCdcJob = defineJob("postgres-cdc", (env) => {
  const fault = recordFaultFrom(process.env.EDDY_CDC_FAULT);
  const source = PostgresCdcSource.create({
    connection: process.env.EDDY_CDC_URL ?? "postgres://localhost/postgres",
    tables: (process.env.EDDY_CDC_TABLES ?? "orders").split(","),
    slot: process.env.EDDY_CDC_SLOT ?? "eddy_cdc",
    publication: process.env.EDDY_CDC_PUBLICATION ?? "eddy_cdc",
    splitRows: Number(process.env.EDDY_CDC_SPLIT_ROWS ?? 100_000),
    fetchRows: Number(process.env.EDDY_CDC_FETCH_ROWS ?? 4_096),
    statusIntervalMs: 200,
  });
  let seen = 0;
  const hold = process.env.EDDY_CDC_HOLD || undefined;
  let released = hold === undefined;
  const changes = env.fromSource(source, WatermarkStrategy.noWatermarks<ChangeRecord>(), "cdc").map((c) => {
    seen++;
    if (!released && seen % 10 === 0) {
      released = existsSync(hold!);
      if (!released) Atomics.wait(sleeper, 0, 0, 1);
    }
    if (fault !== undefined && seen === fault.atRecord && fireOnce(fault.marker)) {
      if (fault.kind === "exit") process.exit(3);
      throw new Error(`injected fault at change ${seen}`);
    }
    return c;
  });
  if (process.env.EDDY_CDC_MODE !== "aggregate") {
    changes.sinkTo(collectSink("changes"));
    return;
  }
  changes
    .map((c): GroupTotal => {
      const sign = isAccumulate(c) ? 1 : -1;
      return { grp: c.row.grp as number, cnt: sign, total: sign * (c.row.amount as number) };
    })
    .keyBy((t) => t.grp)
    .reduce((a, b) => ({ grp: a.grp, cnt: a.cnt + b.cnt, total: a.total + b.total }))
    .uid("totals")
    .sinkTo(
      PostgresSink.upsert<GroupTotal>({
        connection: process.env.EDDY_CDC_URL ?? "postgres://localhost/postgres",
        table: process.env.EDDY_CDC_RESULT ?? "totals",
        columns: ["grp", "cnt", "total"],
        keyColumns: ["grp"],
        kind: (t) => (t.cnt === 0 ? "delete" : "upsert"),
        flushIntervalMs: 10,
      }),
      "totals",
    );
});

export default postgresCdcJob;
