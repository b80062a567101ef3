/**
 * The winning-bid join of Nexmark q4 and q9 (examples/nexmark/winning-bids.ts) where its timers
 * matter: they are coalesced to the end of a second, so an auction's winner must still wait for
 * the bids of its last second, reject the bids after its expiry in that same second, and bids that
 * came before their auction must still be joined when they fall into its lifetime. The Nexmark
 * oracle tests (test/nexmark.test.ts) do not reach these cases with the generator's data.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { defineJob, type Auction, type Bid } from "eddy";
import { collectSink, runJob } from "eddy/testing";
import { punctuated } from "./fixtures.ts";
import { coalesced, winningBids, type WinningBid } from "../examples/nexmark/winning-bids.ts";

interface Event {
  readonly ts: number;
  readonly auction?: Auction;
  readonly bid?: Bid;
}

const auction = (id: number, dateTime: number, expires: number): Event => ({
  ts: dateTime,
  auction: { id, itemName: `item-${id}`, description: "", initialBid: 1, reserve: 1, dateTime, expires, seller: 1, category: 10, extra: "" },
});
const bid = (auctionId: number, price: number, dateTime: number, bidder = 1): Event => ({
  ts: dateTime,
  bid: { auction: auctionId, bidder, price, channel: "Google", url: "https://example.com", dateTime, extra: "" },
});

async function winners(events: readonly Event[]): Promise<Map<number, number>> {
  const job = defineJob("winning-bids", (env) => {
    const stamped = env.fromCollection(events).assignTimestampsAndWatermarks(punctuated<Event>(0));
    const auctions = stamped.flatMap<Auction>((e, out) => {
      if (e.auction !== undefined) out.collect(e.auction);
    });
    const bids = stamped.flatMap<Bid>((e, out) => {
      if (e.bid !== undefined) out.collect(e.bid);
    });
    auctions
      .connect(bids)
      .keyBy(
        (a) => a.id,
        (b) => b.auction,
      )
      .process(winningBids())
      .sinkTo(collectSink("winners"));
  });
  const handle = runJob(job);
  await handle.done;
  const won = new Map<number, number>();
  for (const w of handle.collected<WinningBid>("winners")) {
    assert.equal(won.has(w.auction.id), false, `auction ${w.auction.id} won twice`);
    won.set(w.auction.id, w.bid.price);
  }
  return won;
}

test("coalesced times are the last millisecond of their second, never earlier", () => {
  assert.equal(coalesced(10_500), 10_999);
  assert.equal(coalesced(10_000), 10_999);
  assert.equal(coalesced(10_999), 10_999);
  assert.equal(coalesced(-1), -1);
  for (const t of [0, 1, 999, 1_000, 1_700_000_000_123]) assert.ok(coalesced(t) >= t && coalesced(t) - t < 1_000);
});

test("an auction's winner waits for the bids of its last second and refuses those after its expiry", async () => {
  const won = await winners([
    auction(1, 0, 10_500),
    bid(1, 10, 1_000),
    // Another auction's bid moves the watermark to 10,199: past the start of auction 1's last second.
    bid(2, 5, 10_200),
    bid(1, 99, 10_400), // in the lifetime, in its last second: the winner
    bid(1, 500, 10_600), // after the expiry, before the coalesced timer fires: not in the lifetime
    bid(2, 6, 12_000),
  ]);
  assert.equal(won.get(1), 99);
});

test("a bid that came before its auction wins when it falls into the auction's lifetime", async () => {
  const won = await winners([
    bid(3, 7, 20_700), // auction 3 not there yet: the bid waits
    bid(3, 3, 20_600),
    auction(3, 20_650, 30_000), // the 20,600 bid is before its lifetime, the 20,700 one in it
    bid(4, 1, 31_500), // the watermark passes auction 3's expiry
    auction(5, 40_000, 41_000),
    bid(5, 8, 39_000), // late for auction 5: stamped before it opened
    bid(5, 9, 40_500),
  ]);
  assert.equal(won.get(3), 7);
  assert.equal(won.get(5), 9);
});
