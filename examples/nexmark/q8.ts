/**
 * Nexmark q8 — monitor new users. The people who registered and opened an auction within the
 * same 10 second window.
 *
 *   SELECT P.id, P.name, P.starttime
 *   FROM (SELECT id, name, window_start AS starttime, window_end AS endtime
 *         FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
 *         GROUP BY id, name, window_start, window_end) P
 *   JOIN (SELECT seller, window_start AS starttime, window_end AS endtime
 *         FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
 *         GROUP BY seller, window_start, window_end) A
 *   ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;
 *
 * DataStream: a window `coGroup` of persons (keyed by id) and auctions' sellers over
 * tumbling 10 s event-time windows. Both sides of the SQL are grouped (distinct) before the join,
 * so a person who opened several auctions in the window appears once: a coGroup sees all the
 * window's auctions of the person at once and emits one row when there is at least one, where a
 * window `join` would emit one row per auction.
 *
 * The coGroup function is not given its window, so the window start is computed from the
 * person's timestamp (tumbling windows are aligned to multiples of their size).
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q8.ts -p 2
 */
import { defineJob, Time, TumblingEventTimeWindows, type Auction, type DataStream, type Person, type StreamExecutionEnvironment } from "eddy";
import { auctionsOf, nexmarkEvents, personsOf } from "./nexmark-streams.ts";

export interface Q8Result {
  readonly id: number;
  readonly name: string;
  /** Start of the window (ms since the epoch). */
  readonly starttime: number;
}

const WINDOW_MS = Time.seconds(10);

/** What q8 reads of a person. */
interface NewPerson {
  readonly id: number;
  readonly name: string;
  readonly dateTime: number;
}

export function q8(env: StreamExecutionEnvironment): DataStream<Q8Result> {
  const events = nexmarkEvents(env);
  // Only what the coGroup reads crosses its keyBy and waits in window state (docs/performance.md,
  // "Project before a keyBy"): a person's id, name and time, an auction's seller.
  const persons = personsOf(events).map((p: Person): NewPerson => ({ id: p.id, name: p.name, dateTime: p.dateTime }));
  const sellers = auctionsOf(events).map((a: Auction) => a.seller);
  return persons
    .coGroup(sellers)
    .where((p) => p.id)
    .equalTo((seller) => seller)
    .window(TumblingEventTimeWindows.of(WINDOW_MS))
    .apply((persons, auctions, out: { collect(r: Q8Result): void }) => {
      if (auctions.length === 0) return;
      // A person registers once: at most one per id and window.
      for (const p of persons) out.collect({ id: p.id, name: p.name, starttime: p.dateTime - (p.dateTime % WINDOW_MS) });
    })
    .uid("q8-new-sellers");
}

export default defineJob("nexmark-q8", (env) => {
  q8(env).print();
});
