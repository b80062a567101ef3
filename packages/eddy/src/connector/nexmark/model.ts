/**
 * The Nexmark data model: people who sell and bid, auctions, and bids, with the field names of
 * the Flink Nexmark suite so that its queries read the same here. Plain immutable objects with
 * numbers for ids, prices (cents) and times (ms since the epoch): cheap to create, cheap to encode
 * between threads, and directly comparable with a SQL oracle's BIGINT/TIMESTAMP columns.
 */

/** A person who registered to sell or bid. */
export interface Person {
  /** Person id, from 1000 up; person k of the run has id 1000 + k. */
  readonly id: number;
  /** First and last name from small fixed lists. */
  readonly name: string;
  readonly emailAddress: string;
  /** Four groups of four digits separated by spaces. */
  readonly creditCard: string;
  readonly city: string;
  /** One of six US states: AZ, CA, ID, OR, WA, WY. */
  readonly state: string;
  /** Event time of the registration (ms since the epoch). */
  readonly dateTime: number;
  /** Padding so that a person is about 200 bytes on average. */
  readonly extra: string;
}

/** An item put up for auction. */
export interface Auction {
  /** Auction id, from 1000 up; auction k of the run has id 1000 + k. */
  readonly id: number;
  readonly itemName: string;
  readonly description: string;
  /** Starting price in cents. */
  readonly initialBid: number;
  /** Reserve price in cents; always greater than `initialBid`. */
  readonly reserve: number;
  /** Event time the auction opened (ms since the epoch). */
  readonly dateTime: number;
  /** Event time the auction closes (ms since the epoch); always greater than `dateTime`. */
  readonly expires: number;
  /** Person id of the seller (may be up to a few ids ahead of the last person generated). */
  readonly seller: number;
  /** Category id, 10..14. */
  readonly category: number;
  /** Padding so that an auction is about 500 bytes on average. */
  readonly extra: string;
}

/** A bid on an auction. */
export interface Bid {
  /** Auction id this bid is for (may be up to a few ids ahead of the last auction generated). */
  readonly auction: number;
  /** Person id of the bidder (may be up to a few ids ahead of the last person generated). */
  readonly bidder: number;
  /** Price in cents. */
  readonly price: number;
  /** "Google", "Facebook", "Baidu", "Apple" (half of the bids) or "channel-<n>". */
  readonly channel: string;
  readonly url: string;
  /** Event time of the bid (ms since the epoch). */
  readonly dateTime: number;
  /** Padding so that a bid is about 100 bytes on average. */
  readonly extra: string;
}

/**
 * One Nexmark event. Every event has all four fields and exactly one of person / auction / bid is
 * set (like the Flink suite's `Event`): all events then share one object shape, so `e.type` or
 * `e.bid !== undefined` stays a monomorphic property load in filters, and the thread codec sees
 * one record shape. Narrow on `type` (or on the field being defined) to get the payload.
 */
export type NexmarkEvent =
  | { readonly type: "person"; readonly person: Person; readonly auction: undefined; readonly bid: undefined }
  | { readonly type: "auction"; readonly person: undefined; readonly auction: Auction; readonly bid: undefined }
  | { readonly type: "bid"; readonly person: undefined; readonly auction: undefined; readonly bid: Bid };

export type NexmarkEventType = NexmarkEvent["type"];
