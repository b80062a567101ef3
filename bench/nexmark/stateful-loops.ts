/**
 * Hand-written loops for the stateful queries (joins and windows), the same contract as
 * stateless-loops.ts: the job's events in id order on one thread, the query's result records,
 * folded with its digest.
 *
 * They rely on what a single ordered pass over the generator gives for free: event time never
 * decreases with the id, so a window is complete as soon as the first event past its end
 * arrives, and a session is over when its bidder's next bid comes after its end. No watermarks,
 * no timers, no state backend, no copies.
 */
import { nexmarkEvent, type Auction, type Bid, type Person } from "eddy";
import type { Q3Result } from "../../examples/nexmark/q3.ts";
import type { Q5Result } from "../../examples/nexmark/q5.ts";
import type { Q7Result } from "../../examples/nexmark/q7.ts";
import type { Q8Result } from "../../examples/nexmark/q8.ts";
import type { Q11Result } from "../../examples/nexmark/q11.ts";
import { CATEGORY as Q20_CATEGORY, expand, type Q20Result } from "../../examples/nexmark/q20.ts";
import { digestQ11, digestQ3, digestQ5, digestQ7, digestQ8 } from "./digests.ts";
import { emptyFold, foldDigest, type OutputFold } from "../output-fold.ts";
import type { EventRange } from "./event-range.ts";

/** q3: category-10 auctions joined with their seller if the seller lives in OR, ID or CA. */
export function q3Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  const sellers = new Map<number, Person>();
  /** Auctions whose seller has not registered yet (kept forever, as the job keeps them). */
  const waiting = new Map<number, Auction[]>();
  const emit = (p: Person, a: Auction): void => {
    const r: Q3Result = { name: p.name, city: p.city, state: p.state, id: a.id };
    foldDigest(fold, digestQ3(r));
  };
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const e = nexmarkEvent(id, config);
    if (e.person !== undefined) {
      const p = e.person;
      if (p.state !== "OR" && p.state !== "ID" && p.state !== "CA") continue;
      sellers.set(p.id, p);
      const pending = waiting.get(p.id);
      if (pending === undefined) continue;
      for (const a of pending) emit(p, a);
      waiting.delete(p.id);
    } else if (e.auction !== undefined) {
      const a = e.auction;
      if (a.category !== 10) continue;
      const p = sellers.get(a.seller);
      if (p !== undefined) emit(p, a);
      else {
        const pending = waiting.get(a.seller);
        if (pending === undefined) waiting.set(a.seller, [a]);
        else pending.push(a);
      }
    }
  }
  return fold;
}

const Q5_SLIDE_MS = 2_000;
const Q5_SIZE_MS = 10_000;
const Q5_PANES = Q5_SIZE_MS / Q5_SLIDE_MS;

/**
 * q5: bids per auction in 2 s panes; when event time enters pane p, every window ending at or
 * before p's start is complete: merge its five panes, emit the auctions with the highest count.
 */
export function q5Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  /** Pane index (start / slide) → bids per auction in it; panes older than a window are deleted. */
  const panes = new Map<number, Map<number, number>>();
  const counts = new Map<number, number>();
  /** Fires the window ending at the start of pane `endPane` (panes endPane-5 .. endPane-1). */
  const fire = (endPane: number): void => {
    counts.clear();
    for (let p = endPane - Q5_PANES; p < endPane; p++) {
      const pane = panes.get(p);
      if (pane === undefined) continue;
      for (const [auction, n] of pane) counts.set(auction, (counts.get(auction) ?? 0) + n);
    }
    let max = 0;
    for (const n of counts.values()) if (n > max) max = n;
    const endtime = endPane * Q5_SLIDE_MS;
    for (const [auction, num] of counts) {
      if (num !== max) continue;
      const r: Q5Result = { auction, num, starttime: endtime - Q5_SIZE_MS, endtime };
      foldDigest(fold, digestQ5(r));
    }
    panes.delete(endPane - Q5_PANES);
  };
  let current = Number.NEGATIVE_INFINITY;
  let pane: Map<number, number> | undefined;
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const p = Math.floor(b.dateTime / Q5_SLIDE_MS);
    if (p !== current) {
      // Windows ending at the start of panes current+1 .. p are complete (none before the first bid).
      if (current !== Number.NEGATIVE_INFINITY) for (let k = current + 1; k <= Math.min(p, current + Q5_PANES); k++) fire(k);
      current = p;
      pane = new Map();
      panes.set(p, pane);
    }
    pane!.set(b.auction, (pane!.get(b.auction) ?? 0) + 1);
  }
  if (current !== Number.NEGATIVE_INFINITY) for (let k = current + 1; k <= current + Q5_PANES; k++) fire(k);
  return fold;
}

const Q7_WINDOW_MS = 10_000;

/** q7: per tumbling 10 s window, the highest price and every bid at it; emitted when the window ends. */
export function q7Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  let windowStart = Number.NEGATIVE_INFINITY;
  let price = -1;
  let best: Bid[] = [];
  const fire = (): void => {
    for (const b of best) {
      const r: Q7Result = { auction: b.auction, price: b.price, bidder: b.bidder, dateTime: b.dateTime, extra: b.extra };
      foldDigest(fold, digestQ7(r));
    }
  };
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const start = b.dateTime - (b.dateTime % Q7_WINDOW_MS);
    if (start !== windowStart) {
      fire();
      windowStart = start;
      price = -1;
      best = [];
    }
    if (b.price > price) {
      price = b.price;
      best = [b];
    } else if (b.price === price) best.push(b);
  }
  fire();
  return fold;
}

const Q8_WINDOW_MS = 10_000;

/** q8: per tumbling 10 s window, the people who registered in it and also opened an auction in it. */
export function q8Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  let windowStart = Number.NEGATIVE_INFINITY;
  let persons: Person[] = [];
  const sellers = new Set<number>();
  const fire = (): void => {
    for (const p of persons) {
      if (!sellers.has(p.id)) continue;
      const r: Q8Result = { id: p.id, name: p.name, starttime: windowStart };
      foldDigest(fold, digestQ8(r));
    }
    persons = [];
    sellers.clear();
  };
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const e = nexmarkEvent(id, config);
    if (e.bid !== undefined) continue;
    const dateTime = e.person !== undefined ? e.person.dateTime : e.auction.dateTime;
    const start = dateTime - (dateTime % Q8_WINDOW_MS);
    if (start !== windowStart) {
      fire();
      windowStart = start;
    }
    if (e.person !== undefined) persons.push(e.person);
    else sellers.add(e.auction.seller);
  }
  fire();
  return fold;
}

const Q11_GAP_MS = 10_000;

interface Session {
  start: number;
  /** Last bid + gap: a bid at or before it extends the session (Flink merges touching windows). */
  end: number;
  count: number;
}

/** q11: per bidder, sessions closed by 10 s without a bid; each is emitted when it is known to be over. */
export function q11Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  const sessions = new Map<number, Session>();
  const emit = (bidder: number, s: Session): void => {
    const r: Q11Result = { bidder, bidCount: s.count, starttime: s.start, endtime: s.end };
    foldDigest(fold, digestQ11(r));
  };
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const s = sessions.get(b.bidder);
    if (s !== undefined && b.dateTime <= s.end) {
      s.end = Math.max(s.end, b.dateTime + Q11_GAP_MS);
      s.count++;
      continue;
    }
    if (s !== undefined) emit(b.bidder, s);
    sessions.set(b.bidder, { start: b.dateTime, end: b.dateTime + Q11_GAP_MS, count: 1 });
  }
  for (const [bidder, s] of sessions) emit(bidder, s);
  return fold;
}

/**
 * q20: every bid on a category-10 auction with the auction's fields, emitted when the second of
 * the two arrives (bids on an auction not generated yet wait for it). Takes its digest like the
 * updating loops (updating-loops.ts); its output does not depend on the interleaving.
 */
export function q20Loop({ firstEventId, events, config }: EventRange, digest: (r: Q20Result) => number): OutputFold {
  const fold = emptyFold();
  /** Category-10 auctions by id. */
  const auctions = new Map<number, Auction>();
  const waiting = new Map<number, Bid[]>();
  let lastAuctionId = Number.NEGATIVE_INFINITY;
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const e = nexmarkEvent(id, config);
    if (e.auction !== undefined) {
      const a = e.auction;
      lastAuctionId = a.id;
      const pending = waiting.get(a.id);
      waiting.delete(a.id);
      if (a.category !== Q20_CATEGORY) continue;
      auctions.set(a.id, a);
      if (pending !== undefined) for (const b of pending) foldDigest(fold, digest(expand(b, a)));
    } else if (e.bid !== undefined) {
      const b = e.bid;
      const a = auctions.get(b.auction);
      if (a !== undefined) foldDigest(fold, digest(expand(b, a)));
      else if (b.auction > lastAuctionId) {
        const pending = waiting.get(b.auction);
        if (pending === undefined) waiting.set(b.auction, [b]);
        else pending.push(b);
      }
    }
  }
  return fold;
}
