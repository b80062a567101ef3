/**
 * One digest per query result type (see output-fold.ts): used by the Eddy job's sink and by the
 * hand-written loop alike, so the two checksums are comparable.
 *
 * The updating queries (q4, q15-q17) also have a digest of the part of a row that does not depend
 * on how the job's inputs interleave (`digestQ4Category` and the `...Update` ones), and q12 one of what does not depend on
 * processing time: queries.ts says which the bench compares at which parallelism.
 */
import type { Q0Result } from "../../examples/nexmark/q0.ts";
import type { Q1Result } from "../../examples/nexmark/q1.ts";
import type { Q10Row } from "../../examples/nexmark/q10.ts";
import type { Q2Result } from "../../examples/nexmark/q2.ts";
import type { Q3Result } from "../../examples/nexmark/q3.ts";
import type { Q5Result } from "../../examples/nexmark/q5.ts";
import type { Q7Result } from "../../examples/nexmark/q7.ts";
import type { Q8Result } from "../../examples/nexmark/q8.ts";
import type { Q11Result } from "../../examples/nexmark/q11.ts";
import type { Q14Result } from "../../examples/nexmark/q14.ts";
import type { Q21Result } from "../../examples/nexmark/q21.ts";
import type { Q22Result } from "../../examples/nexmark/q22.ts";
import type { Q4Result } from "../../examples/nexmark/q4.ts";
import type { Q12Result } from "../../examples/nexmark/q12.ts";
import type { Q15Result } from "../../examples/nexmark/q15.ts";
import type { Q16Result } from "../../examples/nexmark/q16.ts";
import type { Q17Result } from "../../examples/nexmark/q17.ts";
import type { Q18Result } from "../../examples/nexmark/q18.ts";
import type { Q19Result } from "../../examples/nexmark/q19.ts";
import type { Q20Result } from "../../examples/nexmark/q20.ts";
import type { Q9Result } from "../../examples/nexmark/q9.ts";
import type { Q13Result } from "../../examples/nexmark/q13.ts";
import type { BiddingStatistics } from "../../examples/nexmark/bidding-statistics.ts";
import type { Bid } from "eddy";
import { mixNumber, mixString } from "../output-fold.ts";

const SEED = 0x2545f491;

/** q0 and q1 share a shape (q1's price is in euros). */
export function digestBidProjection(r: Q0Result | Q1Result): number {
  let h = mixNumber(SEED, r.auction);
  h = mixNumber(h, r.bidder);
  h = mixNumber(h, r.price);
  h = mixNumber(h, r.dateTime);
  return mixNumber(h, r.extra.length);
}

/** q10's rows: the bid with its time as TIMESTAMP(3) text. */
export function digestQ10(r: Q10Row): number {
  let h = mixNumber(SEED, r.auction);
  h = mixNumber(h, r.bidder);
  h = mixNumber(h, r.price);
  h = mixString(h, r.dateTime);
  return mixNumber(h, r.extra.length);
}

export function digestQ13(r: Q13Result): number {
  let h = mixNumber(SEED, r.auction);
  h = mixNumber(h, r.bidder);
  h = mixNumber(h, r.price);
  h = mixNumber(h, r.dateTime);
  return mixString(h, r.value);
}

export function digestQ2(r: Q2Result): number {
  return mixNumber(mixNumber(SEED, r.auction), r.price);
}

export function digestQ3(r: Q3Result): number {
  let h = mixString(SEED, r.name);
  h = mixString(h, r.city);
  h = mixString(h, r.state);
  return mixNumber(h, r.id);
}

export function digestQ5(r: Q5Result): number {
  let h = mixNumber(SEED, r.auction);
  h = mixNumber(h, r.num);
  h = mixNumber(h, r.starttime);
  return mixNumber(h, r.endtime);
}

export function digestQ7(r: Q7Result): number {
  let h = mixNumber(SEED, r.auction);
  h = mixNumber(h, r.price);
  h = mixNumber(h, r.bidder);
  h = mixNumber(h, r.dateTime);
  return mixNumber(h, r.extra.length);
}

export function digestQ8(r: Q8Result): number {
  let h = mixNumber(SEED, r.id);
  h = mixString(h, r.name);
  return mixNumber(h, r.starttime);
}

export function digestQ11(r: Q11Result): number {
  let h = mixNumber(SEED, r.bidder);
  h = mixNumber(h, r.bidCount);
  h = mixNumber(h, r.starttime);
  return mixNumber(h, r.endtime);
}

export function digestQ14(r: Q14Result): number {
  let h = mixNumber(SEED, r.auction);
  h = mixNumber(h, r.bidder);
  h = mixNumber(h, r.price);
  h = mixString(h, r.bidTimeType);
  h = mixNumber(h, r.dateTime);
  h = mixNumber(h, r.extra.length);
  return mixNumber(h, r.cCounts);
}

export function digestQ21(r: Q21Result): number {
  let h = mixNumber(SEED, r.auction);
  h = mixNumber(h, r.bidder);
  h = mixNumber(h, r.price);
  h = mixString(h, r.channel);
  return mixString(h, r.channelId);
}

export function digestQ22(r: Q22Result): number {
  let h = mixNumber(SEED, r.auction);
  h = mixNumber(h, r.bidder);
  h = mixNumber(h, r.price);
  h = mixString(h, r.channel);
  h = mixString(h, r.dir1);
  h = mixString(h, r.dir2);
  return mixString(h, r.dir3);
}

/**
 * q4: the category alone. One row per auction that closed with a bid, but the running averages
 * depend on the order in which a category's auctions close, which is timing (queries.ts).
 */
export function digestQ4Category(r: Q4Result): number {
  return mixNumber(SEED, r.category);
}

/**
 * q12 at any parallelism: the bidder times the bid count. Summed over the rows this is the sum,
 * over bidders, of the bidder's digest times all its bids (mod 2^32), whichever processing-time
 * windows the bids fell into. The number of rows (windows) is not deterministic.
 */
export function digestQ12Bids(r: Q12Result): number {
  return Math.imul(mixNumber(SEED, r.bidder), r.bidCount);
}

function mixStatistics(h: number, s: BiddingStatistics): number {
  h = mixNumber(h, s.totalBids);
  h = mixNumber(h, s.rank1Bids);
  h = mixNumber(h, s.rank2Bids);
  h = mixNumber(h, s.rank3Bids);
  h = mixNumber(h, s.totalBidders);
  h = mixNumber(h, s.rank1Bidders);
  h = mixNumber(h, s.rank2Bidders);
  h = mixNumber(h, s.rank3Bidders);
  h = mixNumber(h, s.totalAuctions);
  h = mixNumber(h, s.rank1Auctions);
  h = mixNumber(h, s.rank2Auctions);
  return mixNumber(h, s.rank3Auctions);
}

export function digestQ15(r: Q15Result): number {
  return mixStatistics(mixString(SEED, r.day), r);
}

/** q15 at parallelism > 1: the group and how many bids it had when the row was emitted. */
export function digestQ15Update(r: Q15Result): number {
  return mixNumber(mixString(SEED, r.day), r.totalBids);
}

export function digestQ16(r: Q16Result): number {
  let h = mixString(SEED, r.channel);
  h = mixString(h, r.day);
  h = mixString(h, r.minute);
  return mixStatistics(h, r);
}

/** q16 at parallelism > 1: as q15's. */
export function digestQ16Update(r: Q16Result): number {
  return mixNumber(mixString(mixString(SEED, r.channel), r.day), r.totalBids);
}

export function digestQ17(r: Q17Result): number {
  let h = mixNumber(SEED, r.auction);
  h = mixString(h, r.day);
  h = mixNumber(h, r.totalBids);
  h = mixNumber(h, r.rank1Bids);
  h = mixNumber(h, r.rank2Bids);
  h = mixNumber(h, r.rank3Bids);
  h = mixNumber(h, r.minPrice);
  h = mixNumber(h, r.maxPrice);
  h = mixNumber(h, r.avgPrice);
  return mixNumber(h, r.sumPrice);
}

/** q17 at parallelism > 1: as q15's. */
export function digestQ17Update(r: Q17Result): number {
  return mixNumber(mixString(mixNumber(SEED, r.auction), r.day), r.totalBids);
}

/** Every field of a bid; url and extra (long) by length. */
function mixBid(h: number, b: Bid): number {
  h = mixNumber(h, b.auction);
  h = mixNumber(h, b.bidder);
  h = mixNumber(h, b.price);
  h = mixString(h, b.channel);
  h = mixNumber(h, b.url.length);
  h = mixNumber(h, b.dateTime);
  return mixNumber(h, b.extra.length);
}

export function digestQ18(r: Q18Result): number {
  return mixBid(SEED, r);
}

export function digestQ19(r: Q19Result): number {
  return mixNumber(mixBid(SEED, r), r.rankNumber);
}

export function digestQ9(r: Q9Result): number {
  let h = mixNumber(SEED, r.id);
  h = mixString(h, r.itemName);
  h = mixNumber(h, r.description.length);
  h = mixNumber(h, r.initialBid);
  h = mixNumber(h, r.reserve);
  h = mixNumber(h, r.dateTime);
  h = mixNumber(h, r.expires);
  h = mixNumber(h, r.seller);
  h = mixNumber(h, r.category);
  h = mixNumber(h, r.extra.length);
  h = mixNumber(h, r.auction);
  h = mixNumber(h, r.bidder);
  h = mixNumber(h, r.price);
  h = mixNumber(h, r.bidDateTime);
  return mixNumber(h, r.bidExtra.length);
}

export function digestQ20(r: Q20Result): number {
  let h = mixNumber(SEED, r.auction);
  h = mixNumber(h, r.bidder);
  h = mixNumber(h, r.price);
  h = mixString(h, r.channel);
  h = mixNumber(h, r.url.length);
  h = mixNumber(h, r.bidDateTime);
  h = mixNumber(h, r.bidExtra.length);
  h = mixString(h, r.itemName);
  h = mixNumber(h, r.description.length);
  h = mixNumber(h, r.initialBid);
  h = mixNumber(h, r.reserve);
  h = mixNumber(h, r.auctionDateTime);
  h = mixNumber(h, r.expires);
  h = mixNumber(h, r.seller);
  h = mixNumber(h, r.category);
  return mixNumber(h, r.auctionExtra.length);
}
