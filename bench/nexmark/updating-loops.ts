/**
 * Hand-written loops for the updating queries (q4, q12, q15-q19) and q9 (which shares q4's winning bids): the same contract as
 * stateless-loops.ts (the job's events in id order on one thread, the query's result records),
 * except that the digest is a parameter: at parallelism > 1 the bench compares only the part of
 * these rows that does not depend on how the job's parallel inputs interleave (queries.ts).
 *
 * Like the job at parallelism 1, they emit a row per update, in the order the updates happen; the
 * query's pure functions (bidding statistics, q17's rows, q18's and q19's orderings) are reused,
 * the keyed state is plain Maps that are mutated in place.
 */
import { nexmarkEvent, type Auction, type Bid } from "eddy";
import { addBid, dayOf, formatDay, formatMinute, NO_BIDS, priceRank, type BiddingStatistics } from "../../examples/nexmark/bidding-statistics.ts";
import type { Q4Result } from "../../examples/nexmark/q4.ts";
import { q9Row, type Q9Result } from "../../examples/nexmark/q9.ts";
import { inLifetime, outbids } from "../../examples/nexmark/winning-bids.ts";
import type { Q12Result } from "../../examples/nexmark/q12.ts";
import type { Q15Result } from "../../examples/nexmark/q15.ts";
import type { Q16Result } from "../../examples/nexmark/q16.ts";
import { firstRow, nextRow, type Q17Result } from "../../examples/nexmark/q17.ts";
import { isLater, type Q18Result } from "../../examples/nexmark/q18.ts";
import { ranksAbove, type Q19Result } from "../../examples/nexmark/q19.ts";
import { emptyFold, foldDigest, type OutputFold } from "../output-fold.ts";
import type { EventRange } from "./event-range.ts";

type Digest<T> = (record: T) => number;

/** An auction between its arrival and the first event past its expiry. */
interface OpenAuction {
  readonly id: number;
  readonly expires: number;
  readonly auction: Auction;
  /** Its winning bid so far (winning-bids.ts's order). */
  best: Bid | undefined;
}

/**
 * Whether `a` closes before `b`: the job's timers fire by (timestamp, registration order). The
 * loop breaks ties by auction id; the job's registration order can differ when a bid that arrived
 * before its auction registered the same timestamp first, so only the categories are compared.
 */
const closesBefore = (a: Closing, b: Closing): boolean => a.expires < b.expires || (a.expires === b.expires && a.id < b.id);

/** What orders an open auction in a ClosingQueue. */
export interface Closing {
  readonly id: number;
  readonly expires: number;
}

/** Open auctions as a binary min-heap by closing order (also bench/hand-join-scaling.ts's q4). */
export class ClosingQueue<T extends Closing = OpenAuction> {
  readonly #heap: T[] = [];

  peek(): T | undefined {
    return this.#heap[0];
  }

  push(a: T): void {
    const heap = this.#heap;
    let i = heap.length;
    heap.push(a);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!closesBefore(a, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = a;
  }

  pop(): T | undefined {
    const heap = this.#heap;
    const head = heap[0];
    const last = heap.pop();
    if (head === undefined || last === undefined || heap.length === 0) return head;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= heap.length) break;
      if (child + 1 < heap.length && closesBefore(heap[child + 1]!, heap[child]!)) child++;
      if (!closesBefore(heap[child]!, last)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
    return head;
  }
}

/**
 * Each auction's winning bid (examples/nexmark/winning-bids.ts: its best bid within its lifetime),
 * final once an event is stamped after its expiry (event time never decreases with the id);
 * auctions close in the order of the job's timers, calling `won` for each that had a bid.
 */
export function forEachWinningBid({ firstEventId, events, config }: EventRange, won: (auction: Auction, bid: Bid) => void): void {
  const open = new Map<number, OpenAuction>();
  const closing = new ClosingQueue();
  /** Bids on auctions that have not arrived yet (the generator bids a few auction ids ahead). */
  const early = new Map<number, Bid[]>();
  let lastAuctionId = Number.NEGATIVE_INFINITY;
  const close = (a: OpenAuction): void => {
    open.delete(a.id);
    if (a.best !== undefined) won(a.auction, a.best);
  };
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const e = nexmarkEvent(id, config);
    if (e.person !== undefined) continue;
    const dateTime = e.bid !== undefined ? e.bid.dateTime : e.auction.dateTime;
    for (let a = closing.peek(); a !== undefined && a.expires < dateTime; a = closing.peek()) close(closing.pop()!);
    if (e.auction !== undefined) {
      const auction = e.auction;
      lastAuctionId = auction.id;
      let best: Bid | undefined;
      for (const b of early.get(auction.id) ?? []) if (inLifetime(auction, b) && outbids(b, best)) best = b;
      early.delete(auction.id);
      const a: OpenAuction = { id: auction.id, expires: auction.expires, auction, best };
      open.set(auction.id, a);
      closing.push(a);
      continue;
    }
    const b = e.bid;
    const a = open.get(b.auction);
    if (a !== undefined) {
      if (inLifetime(a.auction, b) && outbids(b, a.best)) a.best = b;
    } else if (b.auction > lastAuctionId) {
      const waiting = early.get(b.auction);
      if (waiting === undefined) early.set(b.auction, [b]);
      else waiting.push(b);
    }
    // Otherwise the auction has closed: the bid is past its lifetime.
  }
  for (let a = closing.pop(); a !== undefined; a = closing.pop()) close(a);
}

/** q4's second step (averagePrice) on a plain Map: adds a winning price to its category's sum; the running average. */
export function addWinningPrice(sums: Map<number, { sum: number; count: number }>, category: number, price: number): Q4Result {
  let total = sums.get(category);
  if (total === undefined) sums.set(category, (total = { sum: 0, count: 0 }));
  total.sum += price;
  total.count++;
  return { category, final: Math.trunc(total.sum / total.count) };
}

/** q4: each auction closing with a winning bid updates its category's running average. */
export function q4Loop(range: EventRange, digest: Digest<Q4Result>): OutputFold {
  const fold = emptyFold();
  const sums = new Map<number, { sum: number; count: number }>();
  forEachWinningBid(range, (auction, bid) => foldDigest(fold, digest(addWinningPrice(sums, auction.category, bid.price))));
  return fold;
}

/** q9: each auction's row with its winning bid, when it closes. */
export function q9Loop(range: EventRange, digest: Digest<Q9Result>): OutputFold {
  const fold = emptyFold();
  forEachWinningBid(range, (auction, bid) => foldDigest(fold, digest(q9Row({ auction, bid }))));
  return fold;
}

const Q12_WINDOW_MS = 10_000;
/** How many events between two readings of the clock (reading it per bid would be most of the loop's cost). */
const Q12_CLOCK_EVERY = 1024;

/**
 * q12: bids per bidder per 10 s of processing time; a window's counts are emitted when the clock
 * enters the next window, and at the end. Which window a bid falls into depends on when it is
 * processed, as in the job: only the bids per bidder can be compared (digests.ts).
 */
export function q12Loop({ firstEventId, events, config }: EventRange, digest: Digest<Q12Result>): OutputFold {
  const fold = emptyFold();
  const counts = new Map<number, number>();
  const windowOf = (now: number): number => now - (now % Q12_WINDOW_MS);
  let windowStart = windowOf(Date.now());
  const fire = (): void => {
    for (const [bidder, bidCount] of counts) {
      const r: Q12Result = { bidder, bidCount, starttime: windowStart, endtime: windowStart + Q12_WINDOW_MS };
      foldDigest(fold, digest(r));
    }
    counts.clear();
  };
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    if ((id - firstEventId) % Q12_CLOCK_EVERY === 0) {
      const start = windowOf(Date.now());
      if (start !== windowStart) {
        fire();
        windowStart = start;
      }
    }
    const b = nexmarkEvent(id, config).bid;
    if (b !== undefined) counts.set(b.bidder, (counts.get(b.bidder) ?? 0) + 1);
  }
  fire();
  return fold;
}

/** One group of q15 or q16: its statistics, the price bands of its bidders and auctions, its latest bid. */
interface StatisticsGroup {
  stats: BiddingStatistics;
  readonly bidderBands: Map<number, number>;
  readonly auctionBands: Map<number, number>;
  lastDateTime: number;
}

const newGroup = (dateTime: number): StatisticsGroup => ({ stats: NO_BIDS, bidderBands: new Map(), auctionBands: new Map(), lastDateTime: dateTime });

/** Marks `bit` for `value` in `bands`; returns the mask before (the job's `mark`, on a Map). */
function mark(bands: Map<number, number>, value: number, bit: number): number {
  const mask = bands.get(value) ?? 0;
  if ((mask & bit) === 0) bands.set(value, mask | bit);
  return mask;
}

/** Adds `b` to group `g`. */
function addToGroup(g: StatisticsGroup, b: Bid): void {
  const rank = priceRank(b.price);
  const bit = 1 << rank;
  g.stats = addBid(g.stats, rank, mark(g.bidderBands, b.bidder, bit), mark(g.auctionBands, b.auction, bit));
  if (b.dateTime > g.lastDateTime) g.lastDateTime = b.dateTime;
}

/** q15: per UTC day, the bidding statistics, emitted after every bid. */
export function q15Loop({ firstEventId, events, config }: EventRange, digest: Digest<Q15Result>): OutputFold {
  const fold = emptyFold();
  const days = new Map<number, StatisticsGroup>();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const day = dayOf(b.dateTime);
    let g = days.get(day);
    if (g === undefined) days.set(day, (g = newGroup(b.dateTime)));
    addToGroup(g, b);
    const r: Q15Result = { day: formatDay(day), ...g.stats };
    foldDigest(fold, digest(r));
  }
  return fold;
}

/** q16: q15 per channel and day, with the minute of the group's latest bid. */
export function q16Loop({ firstEventId, events, config }: EventRange, digest: Digest<Q16Result>): OutputFold {
  const fold = emptyFold();
  /** Channel → day → group. */
  const channels = new Map<string, Map<number, StatisticsGroup>>();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const day = dayOf(b.dateTime);
    let days = channels.get(b.channel);
    if (days === undefined) channels.set(b.channel, (days = new Map()));
    let g = days.get(day);
    if (g === undefined) days.set(day, (g = newGroup(b.dateTime)));
    addToGroup(g, b);
    const r: Q16Result = { channel: b.channel, day: formatDay(day), minute: formatMinute(g.lastDateTime), ...g.stats };
    foldDigest(fold, digest(r));
  }
  return fold;
}

/**
 * A number key for two ids below 2^21 and 2^32 (q17's auction and day, q18's bidder and auction):
 * exact in a double. 2^21 bidders or auctions is over 100 M events of a default run.
 */
function pairKey(high: number, low: number): number {
  if (high >= 2_097_152 || low >= 4_294_967_296) throw new RangeError(`ids ${high}, ${low} too large for a pair key`);
  return high * 4_294_967_296 + low;
}

/** q17: per auction and UTC day, the bid statistics row, emitted after every bid. */
export function q17Loop({ firstEventId, events, config }: EventRange, digest: Digest<Q17Result>): OutputFold {
  const fold = emptyFold();
  const rows = new Map<number, Q17Result>();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const day = dayOf(b.dateTime);
    const key = pairKey(b.auction, day);
    const s = rows.get(key);
    const next = s === undefined ? firstRow(b.auction, day, b.price) : nextRow(s, b.price);
    rows.set(key, next);
    foldDigest(fold, digest(next));
  }
  return fold;
}

/** q18: each bid that is the latest of its (bidder, auction) so far. */
export function q18Loop({ firstEventId, events, config }: EventRange, digest: Digest<Q18Result>): OutputFold {
  const fold = emptyFold();
  const latest = new Map<number, Bid>();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const key = pairKey(b.bidder, b.auction);
    const last = latest.get(key);
    if (last !== undefined && !isLater(b, last)) continue;
    latest.set(key, b);
    foldDigest(fold, digest(b));
  }
  return fold;
}

const Q19_TOP_N = 10;

/** q19: per auction its 10 highest bids; a bid entering at rank r emits ranks r..10 again. */
export function q19Loop({ firstEventId, events, config }: EventRange, digest: Digest<Q19Result>): OutputFold {
  const fold = emptyFold();
  const tops = new Map<number, Bid[]>();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    let top = tops.get(b.auction);
    if (top === undefined) tops.set(b.auction, (top = []));
    let rank = top.length;
    while (rank > 0 && ranksAbove(b, top[rank - 1]!)) rank--;
    if (rank >= Q19_TOP_N) continue;
    top.splice(rank, 0, b);
    if (top.length > Q19_TOP_N) top.pop();
    for (let i = rank; i < top.length; i++) {
      const r: Q19Result = { ...top[i]!, rankNumber: i + 1 };
      foldDigest(fold, digest(r));
    }
  }
  return fold;
}
