/**
 * What q15, q16 and q17 share: the UTC day of a bid, its price band, and (for q15 and q16) the
 * per-group bidding statistics with distinct counts of bidders and auctions, overall and per band.
 *
 * The statistics are an unbounded (not windowed) aggregation, like Flink's GROUP BY without a
 * window: every bid updates its group's row, which is emitted again. The last row emitted for a
 * group is the SQL answer over all the bids seen so far.
 */
import { MapStateDescriptor, ValueStateDescriptor, type Bid, type KeyedProcessFunction, type MapState } from "eddy";

export const DAY_MS = 86_400_000;

/** Days since the epoch of a UTC timestamp: the group of `DATE_FORMAT(dateTime, 'yyyy-MM-dd')`. */
/**
 * What the statistics read of a bid. q15-q17 send only this across their keyBy, not whole bids
 * (docs/performance.md, "Project before a keyBy"): numbers only, the codec's cheapest shape.
 */
export interface BidFacts {
  readonly auction: number;
  readonly bidder: number;
  readonly price: number;
  readonly dateTime: number;
}

export function bidFacts(b: Bid): BidFacts {
  return { auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime };
}

export function dayOf(dateTime: number): number {
  return Math.floor(dateTime / DAY_MS);
}

let lastDay = Number.NaN;
let lastDayText = "";

/** 'yyyy-MM-dd' of a day from `dayOf`. Bids arrive day after day, so the last one is remembered. */
export function formatDay(day: number): string {
  if (day !== lastDay) {
    lastDayText = new Date(day * DAY_MS).toISOString().slice(0, 10);
    lastDay = day;
  }
  return lastDayText;
}

let lastMinute = Number.NaN;
let lastMinuteText = "";

/** 'HH:mm' (UTC) of a timestamp. Event time moves forward, so the last minute formatted is remembered. */
export function formatMinute(dateTime: number): string {
  const minute = Math.floor(dateTime / 60_000);
  if (minute !== lastMinute) {
    lastMinuteText = new Date(minute * 60_000).toISOString().slice(11, 16);
    lastMinute = minute;
  }
  return lastMinuteText;
}

export type PriceRank = 1 | 2 | 3;

/** The queries' price bands, in cents: rank 1 below $100, rank 2 below $10,000, rank 3 above. */
export function priceRank(price: number): PriceRank {
  return price < 10_000 ? 1 : price < 1_000_000 ? 2 : 3;
}

export interface BiddingStatistics {
  readonly totalBids: number;
  readonly rank1Bids: number;
  readonly rank2Bids: number;
  readonly rank3Bids: number;
  readonly totalBidders: number;
  readonly rank1Bidders: number;
  readonly rank2Bidders: number;
  readonly rank3Bidders: number;
  readonly totalAuctions: number;
  readonly rank1Auctions: number;
  readonly rank2Auctions: number;
  readonly rank3Auctions: number;
}

/** The statistics of a group before its first bid. */
export const NO_BIDS: BiddingStatistics = {
  totalBids: 0,
  rank1Bids: 0,
  rank2Bids: 0,
  rank3Bids: 0,
  totalBidders: 0,
  rank1Bidders: 0,
  rank2Bidders: 0,
  rank3Bidders: 0,
  totalAuctions: 0,
  rank1Auctions: 0,
  rank2Auctions: 0,
  rank3Auctions: 0,
};

/**
 * The statistics after one more bid in price band `rank`, whose bidder and auction had the band
 * masks `bidderMask` and `auctionMask` (bit `1 << rank` per band seen, 0: never seen) before it.
 */
export function addBid(s: BiddingStatistics, rank: PriceRank, bidderMask: number, auctionMask: number): BiddingStatistics {
  const bit = 1 << rank;
  const newBidder = (bidderMask & bit) === 0 ? 1 : 0;
  const newAuction = (auctionMask & bit) === 0 ? 1 : 0;
  return {
    totalBids: s.totalBids + 1,
    rank1Bids: s.rank1Bids + (rank === 1 ? 1 : 0),
    rank2Bids: s.rank2Bids + (rank === 2 ? 1 : 0),
    rank3Bids: s.rank3Bids + (rank === 3 ? 1 : 0),
    totalBidders: s.totalBidders + (bidderMask === 0 ? 1 : 0),
    rank1Bidders: s.rank1Bidders + (rank === 1 ? newBidder : 0),
    rank2Bidders: s.rank2Bidders + (rank === 2 ? newBidder : 0),
    rank3Bidders: s.rank3Bidders + (rank === 3 ? newBidder : 0),
    totalAuctions: s.totalAuctions + (auctionMask === 0 ? 1 : 0),
    rank1Auctions: s.rank1Auctions + (rank === 1 ? newAuction : 0),
    rank2Auctions: s.rank2Auctions + (rank === 2 ? newAuction : 0),
    rank3Auctions: s.rank3Auctions + (rank === 3 ? newAuction : 0),
  };
}

/**
 * Updates the statistics of the bid's group (the key) and emits `toResult` of them and of the
 * latest dateTime of the group's bids, per bid.
 *
 * Distinct counts the way Flink's planner does them: one map per distinct column (bidder,
 * auction) from value to a bit mask of the price bands it was seen in. A value new to the map
 * counts once in the total; a band bit new to its mask counts once in that band. State: the
 * distinct bidders and auctions of each group, so it grows with the groups (days) seen.
 */
export function biddingStatistics<K, R>(
  toResult: (key: K, stats: BiddingStatistics, lastDateTime: number) => R,
): KeyedProcessFunction<K, BidFacts, R> {
  // One row per group for the counts and the latest bid time, as Flink's planner keeps one
  // accumulator row per group for all of a GROUP BY's aggregates. Rows are replaced, never
  // mutated, so state need not copy them.
  const row = new ValueStateDescriptor<GroupRow>("bidding-statistics", { copy: "none" });
  const bidderBands = new MapStateDescriptor<number, number>("bidder-price-bands");
  const auctionBands = new MapStateDescriptor<number, number>("auction-price-bands");
  /** Marks `bit` for `value` in `bands`; returns the mask before. */
  const mark = (bands: MapState<number, number>, value: number, bit: number) => {
    const mask = bands.get(value) ?? 0;
    if ((mask & bit) === 0) bands.put(value, mask | bit);
    return mask;
  };
  return {
    processElement(bid, ctx, out) {
      const rank = priceRank(bid.price);
      const bit = 1 << rank;
      const bidder = mark(ctx.getMapState(bidderBands), bid.bidder, bit);
      const auction = mark(ctx.getMapState(auctionBands), bid.auction, bit);
      const state = ctx.getState(row);
      const before = state.value();
      const stats = addBid(before?.stats ?? NO_BIDS, rank, bidder, auction);
      const lastDateTime = before === undefined || bid.dateTime > before.lastDateTime ? bid.dateTime : before.lastDateTime;
      state.update({ stats, lastDateTime });
      out.collect(toResult(ctx.getCurrentKey(), stats, lastDateTime));
    },
  };
}

/** A group's state besides its distinct values: its counts and the dateTime of its latest bid. */
interface GroupRow {
  readonly stats: BiddingStatistics;
  readonly lastDateTime: number;
}
