/**
 * The winning bid of each auction: its highest bid within the auction's lifetime
 * (`B.dateTime BETWEEN A.dateTime AND A.expires`), what q4 averages and q9 returns.
 *
 * Auctions and bids `connect`ed and keyed by auction id; the function keeps the auction and its
 * best bid so far, and emits them once, when event time passes `expires` (an event-time timer,
 * coalesced to the end of that second: `coalesced`):
 * the watermark says every bid stamped up to `expires` has arrived by then, so the winner is final
 * and the auction's state is dropped. Bids that arrive before their auction (the generator bids on
 * auctions a few ids ahead; at parallelism 2 the auction may come from the other subtask) wait for
 * it, but only until event time passes their own dateTime (coalesced too): an auction still missing then opens
 * after the bid, which therefore is outside its lifetime. An auction without a bid in its lifetime
 * emits nothing (an inner join).
 *
 * Ties: q9's SQL orders by price DESC, dateTime ASC; bids equal in both are ordered here by
 * bidder, channel, url and extra (`outbids`), so the winner does not depend on arrival order.
 */
import { ListStateDescriptor, ValueStateDescriptor, type Auction, type Bid, type KeyedCoProcessFunction } from "eddy";

export interface WinningBid<A extends AuctionLifetime = Auction, B extends TimedBid = Bid> {
  readonly auction: A;
  readonly bid: B;
}

/** What the join reads of an auction: q4 sends only this (and its category) across the keyBy. */
export interface AuctionLifetime {
  readonly id: number;
  readonly dateTime: number;
  readonly expires: number;
}

/** What the join reads of a bid, and q4's order of bids (its price); q9 needs whole bids. */
export interface TimedBid {
  readonly auction: number;
  readonly price: number;
  readonly dateTime: number;
}

/** An open auction and its best bid so far. */
interface OpenAuction<A, B> {
  readonly auction: A;
  readonly best: B | undefined;
}

/**
 * Timers fire at the last millisecond of the second their time falls in (Flink's "timer
 * coalescing"): every key with a time in that second shares one timestamp, so the timer service
 * keeps one bucket per second instead of one per auction and bid (q4 spent 15 % of its CPU on
 * timers with one per millisecond). The answer does not change: an auction emits its winner a
 * little later in event time, when every bid up to its expiry is still in; a waiting bid is dropped
 * a little later, when no auction can have it in its lifetime either.
 */
export function coalesced(time: number): number {
  return Math.floor(time / TIMER_GRANULARITY_MS) * TIMER_GRANULARITY_MS + TIMER_GRANULARITY_MS - 1;
}

const TIMER_GRANULARITY_MS = 1_000;

/** Whether `b` beats `best`: higher price, then earlier, then the smaller bidder, channel, url, extra. */
export function outbids(b: Bid, best: Bid | undefined): boolean {
  if (best === undefined || b.price !== best.price) return best === undefined || b.price > best.price;
  if (b.dateTime !== best.dateTime) return b.dateTime < best.dateTime;
  if (b.bidder !== best.bidder) return b.bidder < best.bidder;
  if (b.channel !== best.channel) return b.channel < best.channel;
  if (b.url !== best.url) return b.url < best.url;
  return b.extra < best.extra;
}

export function inLifetime(a: AuctionLifetime, b: TimedBid): boolean {
  return b.dateTime >= a.dateTime && b.dateTime <= a.expires;
}

/**
 * Emits each auction with its winning bid when event time passes its expiry. `beats` orders bids
 * (default: `outbids`, over whole bids); a caller that sends less than whole bids across the keyBy
 * passes an order over what it sends.
 */
export function winningBids(): KeyedCoProcessFunction<number, Auction, Bid, WinningBid>;
export function winningBids<A extends AuctionLifetime, B extends TimedBid>(beats: (b: B, best: B | undefined) => boolean): KeyedCoProcessFunction<number, A, B, WinningBid<A, B>>;
export function winningBids<A extends AuctionLifetime, B extends TimedBid>(
  beats: (b: B, best: B | undefined) => boolean = outbids as unknown as (b: B, best: B | undefined) => boolean,
): KeyedCoProcessFunction<number, A, B, WinningBid<A, B>> {
  // Values are replaced, never mutated, so state need not copy them.
  const open = new ValueStateDescriptor<OpenAuction<A, B>>("open-auction", { copy: "none" });
  const early = new ListStateDescriptor<B>("bids-before-auction", { copy: "none" });
  return {
    processElement1(auction, ctx) {
      let best: B | undefined;
      const waiting = ctx.getListState(early);
      for (const bid of waiting.get()) if (inLifetime(auction, bid) && beats(bid, best)) best = bid;
      waiting.clear();
      ctx.getState(open).update({ auction, best });
      ctx.timerService().registerEventTimeTimer(coalesced(auction.expires));
    },
    processElement2(bid, ctx) {
      const state = ctx.getState(open);
      const current = state.value();
      if (current === undefined) {
        ctx.getListState(early).add(bid);
        ctx.timerService().registerEventTimeTimer(coalesced(bid.dateTime));
      } else if (inLifetime(current.auction, bid) && beats(bid, current.best)) {
        state.update({ auction: current.auction, best: bid });
      }
    },
    onTimer(timestamp, ctx, out) {
      const state = ctx.getState(open);
      const current = state.value();
      if (current !== undefined) {
        if (timestamp !== coalesced(current.auction.expires)) return;
        if (current.best !== undefined) out.collect({ auction: current.auction, bid: current.best });
        state.clear();
        return;
      }
      // No auction yet: bids stamped up to now can no longer fall into its lifetime.
      const waiting = ctx.getListState(early);
      waiting.update(waiting.get().filter((b) => b.dateTime > timestamp));
    },
  };
}
