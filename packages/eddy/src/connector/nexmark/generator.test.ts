import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { EddyError } from "../../core/errors.ts";
import {
  eventKind,
  eventTimestamp,
  FIRST_AUCTION_ID,
  FIRST_PERSON_ID,
  ID_LEAD,
  lastBase0AuctionId,
  lastBase0PersonId,
  nexmarkConfig,
  nexmarkEvent,
} from "./generator.ts";
import type { NexmarkEvent } from "./model.ts";

const config = nexmarkConfig();

function generate(from: number, count: number, c = config): NexmarkEvent[] {
  const out: NexmarkEvent[] = [];
  for (let id = from; id < from + count; id++) out.push(nexmarkEvent(id, c));
  return out;
}

test("the same event id always gives a deep-equal event, whatever was generated before", () => {
  const inOrder = generate(0, 5_000);
  // A fixed permutation of the ids (multiplying by a unit mod 5000 is a bijection).
  for (let i = 0; i < 5_000; i++) {
    const id = (i * 2_377) % 5_000;
    assert.deepEqual(nexmarkEvent(id, config), inOrder[id], `event ${id}`);
  }
  assert.deepEqual(generate(0, 5_000), inOrder);
});

test("the events are pinned: a source restored from a position replays what an older version generated", () => {
  // SHA-256 of one JSON line per event. A change here changes the data of every Nexmark job,
  // and what a job restored from a checkpoint or savepoint of an older version replays.
  const digest = (from: number, count: number, seed = 0): string => {
    const hash = createHash("sha256");
    const c = nexmarkConfig({ seed });
    for (let id = from; id < from + count; id++) hash.update(JSON.stringify(nexmarkEvent(id, c))).update("\n");
    return hash.digest("hex");
  };
  assert.equal(digest(0, 20_000), "cc8dc1c0f4c7d9ed09b93f33343cbbf49946c573fb3f72f29bfc0eb048e6f122");
  assert.equal(digest(2 ** 32 - 5_000, 10_000), "f041854a8a77a8a50746cb8a13f02bd4f4e8f1cf89c00a67303407d5f1a2142d");
  assert.equal(digest(123_456_789, 5_000, 42), "dd61bb4239eff7097360891816390e439eda8f73576991e19dead5a44373f119");
});

test("the seed and ids beyond 2^32 give other, equally deterministic, data", () => {
  const seeded = nexmarkConfig({ seed: 42 });
  assert.notDeepEqual(nexmarkEvent(4, seeded), nexmarkEvent(4, config));
  assert.deepEqual(nexmarkEvent(4, seeded), nexmarkEvent(4, nexmarkConfig({ seed: 42 })));
  const high = 2 ** 32 + 4 * 50 + 4;
  assert.notDeepEqual(nexmarkEvent(high, config).bid?.extra, nexmarkEvent(4 * 50 + 4, config).bid?.extra);
  assert.deepEqual(nexmarkEvent(high, config), nexmarkEvent(high, config));
});

test("every block of 50 ids holds exactly 1 person, 3 auctions and 46 bids, in that order", () => {
  const events = generate(0, 50_000);
  for (let block = 0; block < 1_000; block++) {
    const kinds = events.slice(block * 50, block * 50 + 50).map((e) => e.type);
    assert.deepEqual(kinds, ["person", "auction", "auction", "auction", ...Array<string>(46).fill("bid")], `block ${block}`);
  }
  // The kind follows the id, not the position in the run.
  const shifted = generate(7, 50_000, nexmarkConfig({ firstEventId: 7 }));
  shifted.forEach((e, k) => assert.equal(e.type, eventKind(7 + k)));
  const counts = { person: 0, auction: 0, bid: 0 };
  for (const e of shifted) counts[e.type]++;
  assert.deepEqual(counts, { person: 1_000, auction: 3_000, bid: 46_000 });
});

test("persons and auctions are numbered from 1000; references point at most ID_LEAD past the last generated", () => {
  let lastPerson = FIRST_PERSON_ID - 1;
  let lastAuction = FIRST_AUCTION_ID - 1;
  let hotAuctionBids = 0;
  let hotBidderBids = 0;
  let bids = 0;
  for (let id = 0; id < 50_000; id++) {
    const e = nexmarkEvent(id, config);
    assert.equal(lastBase0PersonId(id) + FIRST_PERSON_ID, e.type === "person" ? lastPerson + 1 : lastPerson);
    assert.equal(lastBase0AuctionId(id) + FIRST_AUCTION_ID, e.type === "auction" ? lastAuction + 1 : lastAuction);
    switch (e.type) {
      case "person":
        assert.equal(e.person.id, ++lastPerson);
        assert.ok(["AZ", "CA", "ID", "OR", "WA", "WY"].includes(e.person.state));
        assert.match(e.person.creditCard, /^\d{4} \d{4} \d{4} \d{4}$/);
        break;
      case "auction": {
        const a = e.auction;
        assert.equal(a.id, ++lastAuction);
        assert.ok(a.seller >= FIRST_PERSON_ID && a.seller <= lastPerson + ID_LEAD, `seller ${a.seller} at ${id}`);
        assert.ok(a.reserve > a.initialBid, `reserve ${a.reserve} ≤ initial bid ${a.initialBid}`);
        assert.ok(a.expires > a.dateTime);
        assert.ok(Number.isInteger(a.category) && a.category >= 10 && a.category <= 14);
        break;
      }
      case "bid": {
        const b = e.bid;
        bids++;
        assert.ok(b.auction >= FIRST_AUCTION_ID && b.auction <= lastAuction + ID_LEAD, `auction ${b.auction} at ${id}`);
        assert.ok(b.bidder >= FIRST_PERSON_ID && b.bidder <= lastPerson + ID_LEAD, `bidder ${b.bidder} at ${id}`);
        assert.ok(Number.isInteger(b.price) && b.price >= 100 && b.price <= 100_000_000);
        const hotAuction = Math.floor((lastAuction - FIRST_AUCTION_ID) / 100) * 100 + FIRST_AUCTION_ID;
        const hotBidder = Math.floor((lastPerson - FIRST_PERSON_ID) / 100) * 100 + 1 + FIRST_PERSON_ID;
        if (b.auction === hotAuction) hotAuctionBids++;
        if (b.bidder === hotBidder) hotBidderBids++;
        break;
      }
    }
  }
  // Beam's skew: half the bids on the hot auction, three quarters by the hot bidder (plus chance hits).
  assert.ok(hotAuctionBids / bids > 0.48 && hotAuctionBids / bids < 0.56, `hot auction share ${hotAuctionBids / bids}`);
  assert.ok(hotBidderBids / bids > 0.73 && hotBidderBids / bids < 0.78, `hot bidder share ${hotBidderBids / bids}`);
});

test("event time is baseTime + floor(k * interEventDelayUs / 1000), non-decreasing in the id", () => {
  const events = generate(0, 50_000);
  events.forEach((e, k) => {
    const dateTime = (e.person ?? e.auction ?? e.bid).dateTime;
    assert.equal(dateTime, config.baseTime + Math.floor(k / 10), `event ${k}`); // 10,000/s: 10 events per ms
    assert.equal(eventTimestamp(k, config), dateTime);
  });
  const slow = nexmarkConfig({ firstEventId: 1_000, firstEventRate: 3, baseTime: 0 });
  let previous = -1;
  for (let id = 1_000; id < 1_100; id++) {
    const t = eventTimestamp(id, slow);
    assert.equal(t, Math.floor(((id - 1_000) * (1e6 / 3)) / 1000));
    assert.ok(t >= previous);
    previous = t;
  }
});

test("records pad to Beam's average sizes: person 200, auction 500, bid 100 bytes", () => {
  const size = { person: 0, auction: 0, bid: 0 };
  for (const e of generate(0, 100_000)) {
    if (e.type === "person") {
      const p = e.person;
      size.person += 8 + p.name.length + p.emailAddress.length + p.creditCard.length + p.city.length + p.state.length + p.extra.length;
    } else if (e.type === "auction") {
      size.auction += 8 + e.auction.itemName.length + e.auction.description.length + 40 + e.auction.extra.length;
    } else {
      size.bid += 32 + e.bid.extra.length;
    }
  }
  assert.ok(Math.abs(size.person / 2_000 - 200) < 5, `person ${size.person / 2_000}`);
  assert.ok(Math.abs(size.auction / 6_000 - 500) < 5, `auction ${size.auction / 6_000}`);
  assert.ok(Math.abs(size.bid / 92_000 - 100) < 2, `bid ${size.bid / 92_000}`);
});

test("half the bids come through the four hot channels; a channel always has the same URL", () => {
  const urlOf = new Map<string, string>();
  let hot = 0;
  let withChannelId = 0;
  let bids = 0;
  for (const e of generate(0, 50_000)) {
    if (e.type !== "bid") continue;
    bids++;
    const { channel, url } = e.bid;
    if (["Google", "Facebook", "Baidu", "Apple"].includes(channel)) hot++;
    else {
      assert.match(channel, /^channel-\d{1,4}$/);
      if (url.includes("&channel_id=")) withChannelId++;
    }
    assert.match(url, /^https:\/\/www\.nexmark\.com\/[a-z_]{3,4}\/[a-z_]{3,4}\/[a-z_]{3,4}\/item\.htm\?query=1/);
    assert.equal(urlOf.get(channel) ?? url, url);
    urlOf.set(channel, url);
  }
  assert.ok(Math.abs(hot / bids - 0.5) < 0.02, `hot share ${hot / bids}`);
  assert.ok(Math.abs(withChannelId / (bids - hot) - 0.9) < 0.03, `channel_id share ${withChannelId / (bids - hot)}`);
});

test("an invalid config is refused with INVALID_NEXMARK_CONFIG", () => {
  for (const bad of [{ firstEventRate: 0 }, { firstEventId: -1 }, { firstEventId: 0.5 }, { seed: 2 ** 32 }, { baseTime: Number.NaN }]) {
    assert.throws(() => nexmarkConfig(bad), (e: unknown) => e instanceof EddyError && e.code === "INVALID_NEXMARK_CONFIG" && e.domain === "config");
  }
});
