/**
 * Nexmark q3 — local item suggestion. Who is selling in category 10 in Oregon, Idaho or
 * California: every category-10 auction joined with its seller, for sellers in those states.
 *
 *   SELECT P.name, P.city, P.state, A.id
 *   FROM auction AS A INNER JOIN person AS P on A.seller = P.id
 *   WHERE A.category = 10 and (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');
 *
 * DataStream: both filters run before the join (as Flink's planner pushes them down); then the two
 * streams are `connect`ed and keyed by person id (person.id, auction.seller), so a seller and all
 * of their auctions meet in one subtask, and a KeyedCoProcessFunction joins them with keyed state:
 * the person once seen, and the auctions that arrived before their seller. It is an unbounded
 * (not windowed) join, like the SQL: each match is emitted once, when its second side arrives.
 *
 * State: one person per seller in the three states, and the pending auctions of sellers not yet
 * seen, which, as in Flink's unbounded join, are never dropped (an auction whose seller is in
 * another state waits forever). A TTL on the descriptors would bound it at the cost of exactness.
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q3.ts -p 2
 */
import {
  defineJob,
  ListStateDescriptor,
  ValueStateDescriptor,
  type Auction,
  type DataStream,
  type KeyedCoProcessFunction,
  type Person,
  type StreamExecutionEnvironment,
} from "eddy";
import { auctionsOf, nexmarkEvents, personsOf } from "./nexmark-streams.ts";

export interface Q3Result {
  readonly name: string;
  readonly city: string;
  readonly state: string;
  /** The auction's id. */
  readonly id: number;
}

const STATES = new Set(["OR", "ID", "CA"]);
const CATEGORY = 10;

/** Joins each auction with its seller, whichever of the two arrives first. */
export function joinSellers(): KeyedCoProcessFunction<number, Person, Auction, Q3Result> {
  const seller = new ValueStateDescriptor<Person>("seller");
  const waitingAuctions = new ListStateDescriptor<Auction>("auctions-waiting-for-seller");
  const match = (p: Person, a: Auction): Q3Result => ({ name: p.name, city: p.city, state: p.state, id: a.id });
  return {
    processElement1(person, ctx, out) {
      // A person registers once, so this runs at most once per key.
      ctx.getState(seller).update(person);
      const waiting = ctx.getListState(waitingAuctions);
      for (const auction of waiting.get()) out.collect(match(person, auction));
      waiting.clear();
    },
    processElement2(auction, ctx, out) {
      const person = ctx.getState(seller).value();
      if (person !== undefined) out.collect(match(person, auction));
      else ctx.getListState(waitingAuctions).add(auction);
    },
  };
}

export function q3(env: StreamExecutionEnvironment): DataStream<Q3Result> {
  const events = nexmarkEvents(env);
  const sellers = personsOf(events).filter((p) => STATES.has(p.state));
  const auctions = auctionsOf(events).filter((a) => a.category === CATEGORY);
  return sellers
    .connect(auctions)
    .keyBy(
      (p) => p.id,
      (a) => a.seller,
    )
    .process(joinSellers())
    .uid("q3-join");
}

export default defineJob("nexmark-q3", (env) => {
  q3(env).print();
});
