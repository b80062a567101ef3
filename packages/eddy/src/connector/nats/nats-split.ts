/**
 * A split of the NATS source: one stream, filtered by one subject (or not at all), read by one
 * ordered consumer, with the position of its next unread message. Splits are what the enumerator
 * assigns and what readers put in checkpoints, so this shape is persisted: it carries a version
 * (`v`), and `parseNatsSplit` treats its input as hostile.
 */
import { EddyError } from "../../core/errors.ts";

export const NATS_SPLIT_VERSION = 1;

export interface NatsSplit {
  readonly v: 1;
  /** `<stream>` or `<stream>/<subject>`: unique within a source. */
  readonly splitId: string;
  readonly stream: string;
  /** The subject filter (wildcards allowed), or null for every message of the stream. */
  readonly subject: string | null;
  /**
   * The stream sequence of the next unread message: reading resumes here (opt_start_seq). 0 while
   * the start is not resolved yet: then `startTimeMs`, or with `startNew` the stream's end.
   */
  readonly next: number;
  /** With `next` 0: the first message stored at or after this time (epoch ms); null: from the first message. */
  readonly startTimeMs: number | null;
  /** With `next` 0: only messages stored after the split is first opened. */
  readonly startNew: boolean;
  /** Bounded: the last stream sequence to read, fixed when the split is first opened (the stream's last sequence then, 0 for an empty stream); -1 while not opened. */
  readonly stopAt: number;
  readonly bounded: boolean;
  /**
   * With acknowledgements: the stream sequence of the split's next message, when the reader had
   * fetched it at the snapshot (absent otherwise, and in checkpoints of versions before it). A
   * restore checks that the stream still holds it (docs/connectors/nats.md, "too old").
   */
  readonly ahead?: number;
  /**
   * With acknowledgements: the consumer (name and creation time) that delivered the split's last
   * emitted message, and that delivery's sequence; a restore checks the consumer has acknowledged
   * no delivery after it.
   */
  readonly delivered?: { readonly consumer: string; readonly created: string; readonly seq: number };
}

function isDelivered(d: unknown): boolean {
  const x = d as { consumer?: unknown; created?: unknown; seq?: unknown } | null;
  return x !== null && typeof x === "object" && typeof x.consumer === "string" && typeof x.created === "string" && typeof x.seq === "number" && Number.isSafeInteger(x.seq) && x.seq >= 0;
}

/** A split as recorded in a checkpoint (by any version so far); throws CHECKPOINT_CORRUPT for anything else. */
export function parseNatsSplit(value: unknown): NatsSplit {
  const s = value as Partial<Record<keyof NatsSplit, unknown>> | null;
  const nat = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
  if (
    s === null ||
    typeof s !== "object" ||
    s.v !== NATS_SPLIT_VERSION ||
    typeof s.splitId !== "string" ||
    typeof s.stream !== "string" ||
    !(s.subject === null || typeof s.subject === "string") ||
    !nat(s.next) ||
    !(s.startTimeMs === null || nat(s.startTimeMs)) ||
    typeof s.startNew !== "boolean" ||
    !(s.stopAt === -1 || nat(s.stopAt)) ||
    typeof s.bounded !== "boolean" ||
    !(s.ahead === undefined || nat(s.ahead)) ||
    !(s.delivered === undefined || isDelivered(s.delivered))
  ) {
    throw new EddyError("CHECKPOINT_CORRUPT", `a NATS split in the checkpoint is not one this version reads: ${JSON.stringify(value)?.slice(0, 200)}`);
  }
  return s as NatsSplit;
}
