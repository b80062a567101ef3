/**
 * Which bucket (a directory relative to the sink's) a record goes to, after Flink's
 * DateTimeBucketAssigner and BucketAssigner: by the record's event time or by processing time,
 * formatted with a date pattern, or by a user function. Every id is validated once, when its
 * bucket is first seen (the writer keeps the bucket), so the per-record cost is the assignment.
 */
import type { Clock } from "../../core/clock.ts";
import { EddyError } from "../../core/errors.ts";
import { safeBucketProblem } from "./file-sink-state.ts";

/** Passed to a bucket function; one object per writer, reused for every record. */
export interface BucketContext {
  /** The record's timestamp (event time), undefined when it has none. */
  timestamp: number | undefined;
  /** Processing time now (ms), read from the sink's clock. */
  currentProcessingTime(): number;
}

/** A function from a record to its bucket's relative directory ("" for the sink's directory itself). */
export type BucketFunction<T> = (value: T, context: BucketContext) => string;

/** Buckets by a date pattern of event time or processing time. */
export interface DateTimeBuckets {
  readonly by: "event-time" | "processing-time";
  /**
   * Tokens `{yyyy}`, `{MM}`, `{dd}`, `{HH}`, `{mm}`, `{ss}`; everything else is literal.
   * Default `dt={yyyy}-{MM}-{dd}/hour={HH}`.
   */
  readonly pattern?: string;
  /** An IANA time zone; default "UTC". */
  readonly timeZone?: string;
}

export type BucketAssignerOption<T> = DateTimeBuckets | BucketFunction<T>;

export const DEFAULT_BUCKET_PATTERN = "dt={yyyy}-{MM}-{dd}/hour={HH}";

/** Assigns a record its bucket id; throws for a record that has none (event time without a timestamp). */
export type AssignBucket<T> = (value: T, timestamp: number | undefined) => string;

const TOKEN_MS: Record<string, number> = { yyyy: 86_400_000, MM: 86_400_000, dd: 86_400_000, HH: 3_600_000, mm: 60_000, ss: 1_000 };

export function bucketAssigner<T>(option: BucketAssignerOption<T>, clock: Clock): AssignBucket<T> {
  if (typeof option === "function") {
    const context: BucketContext = { timestamp: undefined, currentProcessingTime: () => clock.now() };
    return (value, timestamp) => {
      context.timestamp = timestamp;
      return option(value, context);
    };
  }
  const format = dateFormatter(option.pattern ?? DEFAULT_BUCKET_PATTERN, option.timeZone ?? "UTC");
  if (option.by === "processing-time") return () => format(clock.now());
  if (option.by !== "event-time") throw new EddyError("INVALID_SINK_OPTIONS", `file sink: buckets.by must be "event-time" or "processing-time", not ${JSON.stringify(option.by)}`);
  return (_value, timestamp) => {
    if (timestamp === undefined) {
      throw new EddyError("NO_TIMESTAMP", "file sink: event-time buckets need records with timestamps (assignTimestampsAndWatermarks before the sink)");
    }
    return format(timestamp);
  };
}

/**
 * Formats ms since the epoch with `pattern`. The last id is cached per slot of the pattern's
 * finest unit (per minute for a zone other than UTC, whose offsets are whole minutes), so
 * timestamps that advance slowly cost one division and a compare.
 */
export function dateFormatter(pattern: string, timeZone: string): (ms: number) => string {
  const parts = pattern.split(/(\{[A-Za-z]+\})/).filter((p) => p !== "");
  let slotMs = 86_400_000;
  for (const p of parts) {
    if (!p.startsWith("{")) continue;
    const token = p.slice(1, -1);
    const ms = TOKEN_MS[token];
    if (ms === undefined) throw new EddyError("INVALID_SINK_OPTIONS", `file sink: unknown token ${p} in the bucket pattern '${pattern}' (known: {yyyy} {MM} {dd} {HH} {mm} {ss})`);
    slotMs = Math.min(slotMs, ms);
  }
  const utc = timeZone === "UTC";
  let fields: (ms: number) => Record<string, string>;
  if (utc) {
    fields = (ms) => {
      const d = new Date(ms);
      return { yyyy: String(d.getUTCFullYear()).padStart(4, "0"), MM: pad(d.getUTCMonth() + 1), dd: pad(d.getUTCDate()), HH: pad(d.getUTCHours()), mm: pad(d.getUTCMinutes()), ss: pad(d.getUTCSeconds()) };
    };
  } else {
    let dtf: Intl.DateTimeFormat;
    try {
      dtf = new Intl.DateTimeFormat("en-US", { timeZone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
    } catch {
      throw new EddyError("INVALID_SINK_OPTIONS", `file sink: unknown time zone '${timeZone}'`);
    }
    slotMs = Math.min(slotMs, 60_000);
    fields = (ms) => {
      const f: Record<string, string> = {};
      for (const { type, value } of dtf.formatToParts(ms)) f[type] = value;
      return { yyyy: f.year!.padStart(4, "0"), MM: f.month!, dd: f.day!, HH: f.hour!, mm: f.minute!, ss: f.second! };
    };
  }
  let lastSlot = Number.NaN;
  let lastId = "";
  return (ms) => {
    const slot = Math.floor(ms / slotMs);
    if (slot === lastSlot) return lastId;
    const f = fields(ms);
    lastId = parts.map((p) => (p.startsWith("{") ? f[p.slice(1, -1)]! : p)).join("");
    lastSlot = slot;
    return lastId;
  };
}

const pad = (n: number): string => (n < 10 ? `0${n}` : String(n));

/** Checks a bucket id once, when its bucket is first seen; a bad one fails the task naming it. */
export function validateBucketId(id: unknown): string {
  if (typeof id !== "string") throw new EddyError("FILE_SINK_BAD_BUCKET", `file sink: the bucket assigner returned ${typeof id} ${JSON.stringify(id)?.slice(0, 100)}, not a string`);
  const problem = safeBucketProblem(id);
  if (problem !== undefined) throw new EddyError("FILE_SINK_BAD_BUCKET", `file sink: bucket id ${JSON.stringify(id)} is not a safe relative directory: ${problem}`);
  // One spelling per directory: "a//b/", "./a" and "a" are the same bucket.
  return id.split(/[/\\]/).filter((s) => s !== "" && s !== ".").join("/");
}
