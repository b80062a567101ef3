/**
 * The job of the NATS kill-and-compare tests (test/nats-pipeline.test.ts): NATS → keyed running
 * count and sum → NATS. Set by the environment (read when each thread builds the job):
 * - EDDY_NATS_URL: the server; the input is the stream EDDY_NATS_IN (default NUMBERS; JSON numbers
 *   1..n, bounded);
 * - EDDY_NATS_ACK: read with acknowledgements (`acknowledge: { consumer }`) by consumer(s) of this name;
 * - EDDY_NATS_OUT: the subject the totals are published to;
 * - EDDY_NATS_FAULT: `{ kind: "exit" | "process", atRecord, marker }`: fires once, at the first
 *   record ≥ atRecord seen after a checkpoint of the job completed (EDDY_NATS_CHECKPOINTS, the
 *   job's checkpoint directory); until one did the source runs slowly (1 ms a record, small
 *   fetches), so that one does before the input ends however slow the machine (a nap downstream,
 *   as before, backed records up in front of the barriers: under CI's load the input ended first);
 * - EDDY_NATS_RELEASE: the job runs slowly (1 ms per record) until this file exists.
 *
 * The source has one split (parallelism 1) and the totals go from the keyed reduce straight to the
 * sink: each sink subtask receives its records over one channel, in the same order in every run,
 * which the sink's positional message ids need (docs/connectors/nats.md).
 */
import { existsSync } from "node:fs";
import { defineJob, WatermarkStrategy } from "eddy";
import { NatsSink, NatsSource } from "eddy/nats";
import { latestCheckpoint } from "./checkpointed.ts";
import { fireOnce, recordFaultFrom } from "./fault-markers.ts";

export const KEYS = 50;

export interface Total {
  readonly key: number;
  readonly count: number;
  readonly sum: number;
  /** The last number added. */
  readonly n: number;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
const nap = (): void => void Atomics.wait(sleeper, 0, 0, 1);

export const natsPipelineJob = defineJob("nats-pipeline", (env) => {
  const fault = recordFaultFrom(process.env.EDDY_NATS_FAULT);
  const checkpoints = process.env.EDDY_NATS_CHECKPOINTS || undefined;
  const hold = process.env.EDDY_NATS_RELEASE || undefined;
  const connection = { servers: process.env.EDDY_NATS_URL ?? "nats://127.0.0.1:4222" };
  let released = hold === undefined;
  // With a fault: slow until a checkpoint completed (checked every 50 records).
  let checkpointed = fault === undefined || checkpoints === undefined;
  let seen = 0;
  const decoder = new TextDecoder();
  env
    .fromSource(
      // While held, small fetches: a poll emits what one fetch queued, and the naps of a poll block
      // the thread (and the sink subtask sharing it) for that many milliseconds.
      NatsSource.create(
        {
          connection,
          stream: process.env.EDDY_NATS_IN || "NUMBERS",
          bounded: true,
          fetchMessages: hold === undefined && checkpointed ? 1_000 : 40,
          ...(process.env.EDDY_NATS_ACK ? { acknowledge: { consumer: process.env.EDDY_NATS_ACK } } : {}),
        },
        (m): Total => {
        // Held back at the source (not downstream, where a backlog would delay the barriers).
        if (!released) {
          released = existsSync(hold!);
          if (!released) nap();
        }
        if (!checkpointed) {
          if (seen++ % 50 === 0) checkpointed = latestCheckpoint(checkpoints!) !== undefined;
          if (!checkpointed) nap();
        }
        const n = Number(decoder.decode(m.data));
        return { key: n % KEYS, count: 1, sum: n, n };
      },
      ),
      WatermarkStrategy.noWatermarks(),
      "numbers",
    )
    .keyBy((t) => t.key)
    .reduce((a, b) => {
      if (fault !== undefined && b.n >= fault.atRecord && !existsSync(fault.marker) && (checkpoints === undefined || latestCheckpoint(checkpoints) !== undefined) && fireOnce(fault.marker)) {
        if (fault.kind === "exit") process.exit(3);
        throw new Error(`injected fault at record ${b.n}`);
      }
      return { key: a.key, count: a.count + b.count, sum: a.sum + b.sum, n: b.n };
    })
    .uid("totals")
    .sinkTo(NatsSink.json<Total>({ connection, subject: process.env.EDDY_NATS_OUT ?? "totals" }), "totals");
});

export default natsPipelineJob;
