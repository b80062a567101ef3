/** The events of one bench run, as the job's source reads them from the NEXMARK_* settings. */
import type { NexmarkConfig } from "eddy";
import { nexmarkSettings } from "../../examples/nexmark/nexmark-streams.ts";

export interface EventRange {
  /** Id of the first event (`config.firstEventId`). */
  readonly firstEventId: number;
  /** Events in total: ids firstEventId .. firstEventId + events - 1. */
  readonly events: number;
  readonly config: NexmarkConfig;
}

/** The range the NEXMARK_* environment variables describe now; the run must be bounded. */
export function eventRangeFromSettings(): EventRange {
  const { events, config } = nexmarkSettings();
  if (events === undefined) throw new RangeError("the Nexmark bench needs a bounded run (NEXMARK_EVENTS=<count>)");
  return { firstEventId: config.firstEventId, events, config };
}
