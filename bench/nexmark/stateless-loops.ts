/**
 * Hand-written loops for the stateless queries: the floor of JavaScript on this machine. Each
 * generates the same events as the job's source (`nexmarkEvent(id, config)` for every id of the
 * run, in id order, one thread), computes the query's result records with the query's own user
 * functions, and folds them with the query's digest. No framework, no batching, no exchange.
 */
import { nexmarkEvent } from "eddy";
import { dollarsToEuros, type Q1Result } from "../../examples/nexmark/q1.ts";
import type { Q0Result } from "../../examples/nexmark/q0.ts";
import type { Q2Result } from "../../examples/nexmark/q2.ts";
import { q14Keeps, q14Row } from "../../examples/nexmark/q14.ts";
import { channelId, type Q21Result } from "../../examples/nexmark/q21.ts";
import type { Q22Result } from "../../examples/nexmark/q22.ts";
import { digestBidProjection, digestQ14, digestQ2, digestQ21, digestQ22 } from "./digests.ts";
import { emptyFold, foldDigest, type OutputFold } from "../output-fold.ts";
import type { EventRange } from "./event-range.ts";

export function q0Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const r: Q0Result = { auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime, extra: b.extra };
    foldDigest(fold, digestBidProjection(r));
  }
  return fold;
}

export function q1Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const r: Q1Result = { auction: b.auction, bidder: b.bidder, price: dollarsToEuros(b.price), dateTime: b.dateTime, extra: b.extra };
    foldDigest(fold, digestBidProjection(r));
  }
  return fold;
}

export function q2Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined || b.auction % 123 !== 0) continue;
    const r: Q2Result = { auction: b.auction, price: b.price };
    foldDigest(fold, digestQ2(r));
  }
  return fold;
}

export function q14Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined || !q14Keeps(b)) continue;
    foldDigest(fold, digestQ14(q14Row(b)));
  }
  return fold;
}

export function q21Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const channel = channelId(b.channel, b.url);
    if (channel === undefined) continue;
    const r: Q21Result = { auction: b.auction, bidder: b.bidder, price: b.price, channel: b.channel, channelId: channel };
    foldDigest(fold, digestQ21(r));
  }
  return fold;
}

export function q22Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const parts = b.url.split("/");
    const r: Q22Result = {
      auction: b.auction,
      bidder: b.bidder,
      price: b.price,
      channel: b.channel,
      dir1: parts[3] ?? null,
      dir2: parts[4] ?? null,
      dir3: parts[5] ?? null,
    };
    foldDigest(fold, digestQ22(r));
  }
  return fold;
}
