/**
 * One digest per query result type (see output-fold.ts): used by the Eddy job's sink and by the
 * hand-written loop alike, so the two checksums are comparable.
 */
import type { Q0Result } from "../../examples/nexmark/q0.ts";
import type { Q1Result } from "../../examples/nexmark/q1.ts";
import type { Q2Result } from "../../examples/nexmark/q2.ts";
import type { Q3Result } from "../../examples/nexmark/q3.ts";
import type { Q5Result } from "../../examples/nexmark/q5.ts";
import type { Q7Result } from "../../examples/nexmark/q7.ts";
import type { Q8Result } from "../../examples/nexmark/q8.ts";
import type { Q11Result } from "../../examples/nexmark/q11.ts";
import type { Q14Result } from "../../examples/nexmark/q14.ts";
import type { Q21Result } from "../../examples/nexmark/q21.ts";
import type { Q22Result } from "../../examples/nexmark/q22.ts";
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
