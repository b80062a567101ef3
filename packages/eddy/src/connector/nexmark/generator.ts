/**
 * The Nexmark event generator, following Apache Beam's (`sources/generator` in the Beam Nexmark
 * suite) with the bid channel and URL of the Flink Nexmark suite. Pure functions of an event id
 * and a config: event `k` of a run has id `firstEventId + k`; its id decides its kind and seeds
 * every random choice, and `k` decides its event time. Any subset of ids can thus be generated
 * by any number of generators, in any order, and replayed exactly from a recorded position.
 *
 * Id space (Beam's): of every 50 consecutive ids, `id % 50` = 0 is a person, 1..3 are auctions,
 * 4..49 are bids. Persons and auctions are numbered from 1000 in id order, so the last person or
 * auction generated at any id follows from the id alone (`lastBase0PersonId`,
 * `lastBase0AuctionId`). Bids and auctions refer to a "hot" person or auction (the first of the
 * latest hundred) most of the time, otherwise to a recent one, up to 10 ids ahead of the last
 * generated (Beam's lead, which makes events appear slightly out of order across kinds).
 */
import { EddyError } from "../../core/errors.ts";
import { fixedRandom, nextDouble, nextExtra, nextInt, nextString, seedEventRandom } from "./event-random.ts";
import type { Auction, Bid, NexmarkEvent, Person } from "./model.ts";

export interface NexmarkConfig {
  /**
   * Id of the run's first event (default 0). Event `k` has id `firstEventId + k`: the id picks
   * the kind and seeds the data, `k` the event time. Non-negative safe integer.
   */
  readonly firstEventId: number;
  /** Event time of the first event, ms since the epoch (default 2026-01-01T00:00:00Z: fixed, so runs repeat). */
  readonly baseTime: number;
  /**
   * Events per second of *event time* (default 10,000): event `k` is at
   * `baseTime + floor(k * (1e6 / firstEventRate) / 1000)`. How fast events are emitted is
   * independent of it (see the source's `ratePerSecond`).
   */
  readonly firstEventRate: number;
  /** Mixed into every event's seed (`eventId ^ seed`); another seed gives another data set. int32, default 0. */
  readonly seed: number;
}

export const DEFAULT_NEXMARK_CONFIG: NexmarkConfig = Object.freeze({
  firstEventId: 0,
  baseTime: Date.UTC(2026, 0, 1),
  firstEventRate: 10_000,
  seed: 0,
});

/** The defaults with `overrides` applied, validated. Throws EddyError INVALID_NEXMARK_CONFIG. */
export function nexmarkConfig(overrides: Partial<NexmarkConfig> = {}): NexmarkConfig {
  const config = { ...DEFAULT_NEXMARK_CONFIG, ...overrides };
  const invalid = (what: string): EddyError =>
    new EddyError("INVALID_NEXMARK_CONFIG", `Nexmark config: ${what}`);
  if (!Number.isSafeInteger(config.firstEventId) || config.firstEventId < 0) {
    throw invalid(`firstEventId must be a non-negative safe integer, got ${config.firstEventId}`);
  }
  if (!Number.isSafeInteger(config.baseTime)) throw invalid(`baseTime must be an integer (ms), got ${config.baseTime}`);
  if (!(config.firstEventRate > 0) || !Number.isFinite(config.firstEventRate)) {
    throw invalid(`firstEventRate must be a positive number, got ${config.firstEventRate}`);
  }
  if ((config.seed | 0) !== config.seed) throw invalid(`seed must be a 32-bit integer, got ${config.seed}`);
  return Object.freeze(config);
}

// Beam's constants (its NexmarkConfiguration defaults), fixed here as BENCHMARKS.md specifies.
export const FIRST_PERSON_ID = 1000;
export const FIRST_AUCTION_ID = 1000;
const FIRST_CATEGORY_ID = 10;
const NUM_CATEGORIES = 5;
const PERSON_PROPORTION = 1;
const AUCTION_PROPORTION = 3;
/** Persons + auctions + bids in every block of consecutive ids (1 + 3 + 46). */
export const PROPORTION_DENOMINATOR = 50;
/** Hot sellers / bidders / auctions are the first of each batch of this many. */
const HOT_BATCH = 100;
/** A bid is for a hot auction with probability 1 - 1/2. */
const HOT_AUCTION_RATIO = 2;
/** An auction is by a hot seller with probability 1 - 1/4. */
const HOT_SELLERS_RATIO = 4;
/** A bid is by a hot bidder with probability 1 - 1/4. */
const HOT_BIDDERS_RATIO = 4;
/** A bid comes through a hot channel with probability 1 - 1/2. */
const HOT_CHANNELS_RATIO = 2;
const NUM_IN_FLIGHT_AUCTIONS = 100;
const NUM_ACTIVE_PEOPLE = 1000;
/** How far past the last generated person / auction a random reference may point. */
export const ID_LEAD = 10;
const AVG_PERSON_BYTES = 200;
const AVG_AUCTION_BYTES = 500;
const AVG_BID_BYTES = 100;
const NUM_CHANNELS = 10_000;

const US_STATES = ["AZ", "CA", "ID", "OR", "WA", "WY"] as const;
const US_CITIES = ["Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"] as const;
const FIRST_NAMES = ["Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"] as const;
const LAST_NAMES = ["Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"] as const;
/** Every "first last" combination, built once: index first * LAST_NAMES.length + last. */
const PERSON_NAMES = FIRST_NAMES.flatMap((f) => LAST_NAMES.map((l) => `${f} ${l}`));

const HOT_CHANNELS = ["Google", "Facebook", "Baidu", "Apple"] as const;
const HOT_URLS = HOT_CHANNELS.map((_, i) => flatString(channelBaseUrl(fixedRandom(0x4854 + i))));
/** `channel-<n>` names and their URLs, filled on first use (a fixed table, like Flink's cache). */
const CHANNEL_NAMES: string[] = [];
const CHANNEL_URLS: string[] = [];

/** Which kind of event an id is. */
export function eventKind(eventId: number): NexmarkEvent["type"] {
  const offset = eventId % PROPORTION_DENOMINATOR;
  return offset < PERSON_PROPORTION ? "person" : offset < PERSON_PROPORTION + AUCTION_PROPORTION ? "auction" : "bid";
}

/** Event time of `eventId` (ms since the epoch); non-decreasing in the id. */
export function eventTimestamp(eventId: number, config: NexmarkConfig): number {
  return timestampOf(eventId - config.firstEventId, config);
}

function timestampOf(eventNumber: number, config: NexmarkConfig): number {
  const interEventDelayUs = 1e6 / config.firstEventRate;
  return config.baseTime + Math.floor((eventNumber * interEventDelayUs) / 1000);
}

/** The id (less FIRST_PERSON_ID) of the last person generated at or before `eventId`. */
export function lastBase0PersonId(eventId: number): number {
  const epoch = Math.floor(eventId / PROPORTION_DENOMINATOR);
  const offset = Math.min(eventId % PROPORTION_DENOMINATOR, PERSON_PROPORTION - 1);
  return epoch * PERSON_PROPORTION + offset;
}

/** The id (less FIRST_AUCTION_ID) of the last auction generated at or before `eventId` (-1: none). */
export function lastBase0AuctionId(eventId: number): number {
  let epoch = Math.floor(eventId / PROPORTION_DENOMINATOR);
  let offset = eventId % PROPORTION_DENOMINATOR;
  if (offset < PERSON_PROPORTION) {
    epoch--;
    offset = AUCTION_PROPORTION - 1;
  } else if (offset >= PERSON_PROPORTION + AUCTION_PROPORTION) {
    offset = AUCTION_PROPORTION - 1;
  } else {
    offset -= PERSON_PROPORTION;
  }
  return epoch * AUCTION_PROPORTION + offset;
}

/**
 * Event `eventId` (a safe integer ≥ config.firstEventId). Deterministic: depends on the id and
 * the config only.
 */
// hot path
export function nexmarkEvent(eventId: number, config: NexmarkConfig): NexmarkEvent {
  seedEventRandom(eventId, config.seed);
  const eventNumber = eventId - config.firstEventId;
  const timestamp = timestampOf(eventNumber, config);
  const offset = eventId % PROPORTION_DENOMINATOR;
  // The three literals list the same keys in the same order, so all events share one shape.
  if (offset >= PERSON_PROPORTION + AUCTION_PROPORTION) {
    return { type: "bid", person: undefined, auction: undefined, bid: nextBid(eventId, timestamp) };
  }
  if (offset >= PERSON_PROPORTION) {
    return { type: "auction", person: undefined, auction: nextAuction(eventId, eventNumber, timestamp, config), bid: undefined };
  }
  return { type: "person", person: nextPerson(eventId, timestamp), auction: undefined, bid: undefined };
}

/** ln(10^6): `exp(u * LN_1E6)` is `10^(6u)`, about 2.5x faster than `Math.pow(10, 6u)` in V8. */
const LN_1E6 = 6 * Math.LN10;

/**
 * A random price in cents, log-uniform from $1 to $1,000,000: Beam's `round(10^(6u) * 100)`
 * (through `exp`, which rounded to cents gave the same price as `pow` on 10 M draws).
 */
function nextPrice(): number {
  return Math.round(Math.exp(nextDouble() * LN_1E6) * 100);
}

/** A recent person (base 0): one of the last NUM_ACTIVE_PEOPLE, or up to ID_LEAD ahead. */
function nextBase0PersonId(eventId: number): number {
  const numPeople = lastBase0PersonId(eventId) + 1;
  const activePeople = Math.min(numPeople, NUM_ACTIVE_PEOPLE);
  return numPeople - activePeople + nextInt(activePeople + ID_LEAD);
}

/** A recent auction (base 0): one of the last NUM_IN_FLIGHT_AUCTIONS, or up to ID_LEAD ahead. */
function nextBase0AuctionId(eventId: number): number {
  const maxAuction = lastBase0AuctionId(eventId);
  const minAuction = Math.max(maxAuction - NUM_IN_FLIGHT_AUCTIONS, 0);
  return minAuction + nextInt(maxAuction - minAuction + 1 + ID_LEAD);
}

function nextPerson(eventId: number, timestamp: number): Person {
  const id = lastBase0PersonId(eventId) + FIRST_PERSON_ID;
  const first = nextInt(FIRST_NAMES.length);
  const name = PERSON_NAMES[first * LAST_NAMES.length + nextInt(LAST_NAMES.length)]!;
  const emailAddress = `${nextString(7)}@${nextString(5)}.com`;
  const creditCard = `${fourDigits()} ${fourDigits()} ${fourDigits()} ${fourDigits()}`;
  const city = US_CITIES[nextInt(US_CITIES.length)]!;
  const state = US_STATES[nextInt(US_STATES.length)]!;
  const size = 8 + name.length + emailAddress.length + creditCard.length + city.length + state.length;
  const extra = nextExtra(size, AVG_PERSON_BYTES);
  return { id, name, emailAddress, creditCard, city, state, dateTime: timestamp, extra };
}

function fourDigits(): string {
  return String(nextInt(10_000)).padStart(4, "0");
}

function nextAuction(eventId: number, eventNumber: number, timestamp: number, config: NexmarkConfig): Auction {
  const id = lastBase0AuctionId(eventId) + FIRST_AUCTION_ID;
  const seller =
    (nextInt(HOT_SELLERS_RATIO) > 0
      ? Math.floor(lastBase0PersonId(eventId) / HOT_BATCH) * HOT_BATCH
      : nextBase0PersonId(eventId)) + FIRST_PERSON_ID;
  const category = FIRST_CATEGORY_ID + nextInt(NUM_CATEGORIES);
  const initialBid = nextPrice();
  const expires = timestamp + nextAuctionLengthMs(eventNumber, timestamp, config);
  const itemName = nextString(20);
  const description = nextString(100);
  const reserve = initialBid + nextPrice();
  const size = 8 + itemName.length + description.length + 8 + 8 + 8 + 8 + 8;
  const extra = nextExtra(size, AVG_AUCTION_BYTES);
  return { id, itemName, description, initialBid, reserve, dateTime: timestamp, expires, seller, category, extra };
}

/**
 * An auction lasts 1 ms to twice the event time it takes to generate NUM_IN_FLIGHT_AUCTIONS more
 * auctions, so about that many are open at any time (Beam's `nextAuctionLengthMs`).
 */
function nextAuctionLengthMs(eventNumber: number, timestamp: number, config: NexmarkConfig): number {
  const eventsForAuctions = Math.floor((NUM_IN_FLIGHT_AUCTIONS * PROPORTION_DENOMINATOR) / AUCTION_PROPORTION);
  const horizonMs = timestampOf(eventNumber + eventsForAuctions, config) - timestamp;
  return 1 + nextInt(Math.max(horizonMs * 2, 1));
}

// hot path
function nextBid(eventId: number, timestamp: number): Bid {
  const auction =
    (nextInt(HOT_AUCTION_RATIO) > 0
      ? Math.floor(lastBase0AuctionId(eventId) / HOT_BATCH) * HOT_BATCH
      : nextBase0AuctionId(eventId)) + FIRST_AUCTION_ID;
  // The second person of the batch, so that hot bidders and hot sellers differ.
  const bidder =
    (nextInt(HOT_BIDDERS_RATIO) > 0
      ? Math.floor(lastBase0PersonId(eventId) / HOT_BATCH) * HOT_BATCH + 1
      : nextBase0PersonId(eventId)) + FIRST_PERSON_ID;
  const price = nextPrice();
  let channel: string;
  let url: string;
  if (nextInt(HOT_CHANNELS_RATIO) > 0) {
    const i = nextInt(HOT_CHANNELS.length);
    channel = HOT_CHANNELS[i]!;
    url = HOT_URLS[i]!;
  } else {
    const n = nextInt(NUM_CHANNELS);
    channel = CHANNEL_NAMES[n] ?? fillChannel(n);
    url = CHANNEL_URLS[n]!;
  }
  const extra = nextExtra(8 + 8 + 8 + 8, AVG_BID_BYTES);
  return { auction, bidder, price, channel, url, dateTime: timestamp, extra };
}

/**
 * Fills the table entry of `channel-<n>`; returns its name. The URL depends on `n` only (not on
 * the seed): channels are a fixed dictionary, like the name lists. Nine in ten carry a
 * `channel_id` query parameter (Flink's: the bit-reversed channel number), which q21 extracts.
 */
function fillChannel(n: number): string {
  const random = fixedRandom(0x43484e00 + n);
  let url = channelBaseUrl(random);
  if (random(10) > 0) url += `&channel_id=${Math.abs(reverseBits(n))}`;
  const name = `channel-${n}`;
  CHANNEL_URLS[n] = flatString(url);
  CHANNEL_NAMES[n] = name;
  return name;
}

/**
 * `s` as one flat string. A URL built by concatenation is a rope (a tree of pieces) in V8; kept in
 * a table and emitted millions of times, it would be walked again by every consumer that reads it
 * without flattening it in place (e.g. the codec's joined string columns: ~440 ns per URL instead
 * of ~50). Real sources emit flat strings: decoded from bytes, as this one is.
 */
function flatString(s: string): string {
  return Buffer.from(s, "utf8").toString("utf8");
}

/** Flink's `getBaseUrl`: three random path segments of 3 or 4 characters. */
function channelBaseUrl(random: (n: number) => number): string {
  const segment = (): string => {
    let s = "";
    for (let left = 3 + random(2); left > 0; left--) s += random(13) === 0 ? "_" : String.fromCharCode(0x61 + random(26));
    return s;
  };
  return `https://www.nexmark.com/${segment()}/${segment()}/${segment()}/item.htm?query=1`;
}

/** Java's `Integer.reverse`: the 32 bits of `n` in reverse order, as an int32. */
function reverseBits(n: number): number {
  let r = 0;
  for (let i = 0; i < 32; i++) r = (r << 1) | ((n >>> i) & 1);
  return r | 0;
}
