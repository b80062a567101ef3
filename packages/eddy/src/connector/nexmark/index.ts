/**
 * The built-in Nexmark source (see BENCHMARKS.md): the data model, the deterministic generator
 * and the split-based parallel source. May import core/ and the source contract of connector/.
 *
 * Invariants: an event is a pure function of its id and the config (same id, same event, on any
 * machine and in any order); a split's position is the next event id it emits, so resuming from
 * a snapshotted split yields exactly the remaining events; within a subtask, event time never
 * decreases.
 */
export type { Auction, Bid, NexmarkEvent, NexmarkEventType, Person } from "./model.ts";
export {
  DEFAULT_NEXMARK_CONFIG,
  eventKind,
  eventTimestamp,
  lastBase0AuctionId,
  lastBase0PersonId,
  nexmarkConfig,
  nexmarkEvent,
  type NexmarkConfig,
} from "./generator.ts";
export { nexmarkSource, type NexmarkSourceOptions, type NexmarkSplit, type NexmarkSplitAssignment } from "./source.ts";
