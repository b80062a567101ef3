/**
 * examples/clickstream/sessionize.ts as a test job, with a failure injected where
 * EDDY_CS_FAULT says: `{ kind: "exit" | "process", atClick, marker }` fires once (the marker file)
 * when a subtask has seen `atClick` clicks, by ending its worker thread (`exit`, as a kill of the
 * thread would) or by throwing. EDDY_CS_THROTTLE=n: sleep 1 ms every n clicks, so checkpoints
 * complete while the job runs. Paths come from CLICKS_IN and SESSIONS_OUT as for the example.
 */
import { defineJob } from "eddy";
import { pathsFromEnvironment, sessionize } from "../../examples/clickstream/sessionize.ts";
import { fireOnce } from "./fault-markers.ts";

interface Fault {
  readonly kind: "exit" | "process";
  readonly atClick: number;
  readonly marker: string;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

export default defineJob("clickstream-sessions-test", (env) => {
  const raw = process.env.EDDY_CS_FAULT;
  const fault = raw === undefined || raw === "" ? undefined : (JSON.parse(raw) as Fault);
  const throttle = Number(process.env.EDDY_CS_THROTTLE ?? 0);
  let seen = 0;
  sessionize(env, pathsFromEnvironment(), () => {
    seen++;
    if (throttle > 0 && seen % throttle === 0) Atomics.wait(sleeper, 0, 0, 1);
    if (fault !== undefined && seen === fault.atClick && fireOnce(fault.marker)) {
      if (fault.kind === "exit") process.exit(3);
      throw new Error(`injected failure at click ${seen}`);
    }
  });
});
