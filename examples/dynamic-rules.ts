/**
 * Dynamic alert rules (Flink's broadcast state pattern): rules that change while the job runs —
 * added, tightened, deleted — are broadcast to every subtask of a keyed stream of card
 * transactions, and each transaction is checked against the rules in force at its event time.
 *
 *   npx eddy run examples/dynamic-rules.ts            # 200,000 generated transactions
 *   npx eddy run examples/dynamic-rules.ts -p 2
 *
 * What it shows: `stream.broadcast(descriptor)` and `keyed.connect(broadcast).process(...)` with a
 * KeyedBroadcastProcessFunction; broadcast state written by `processBroadcastElement` and read
 * (read-only) by `onTimer`; keyed state and event-time timers on the keyed side. Alerts are
 * printed as JSON lines on stdout.
 *
 * Why rule changes carry a time: the two inputs interleave as they please, so "the rules that
 * have arrived" differ from run to run. Each change says from when it applies (`at`), broadcast
 * state keeps every change, and a transaction is checked when the watermark — the minimum over
 * both inputs — passes it: by then every change up to its time has arrived. The alerts are then
 * the same in every run, at any parallelism, and after any restore.
 */
import {
  defineJob,
  MapStateDescriptor,
  ValueStateDescriptor,
  WatermarkStrategy,
  type KeyedBroadcastProcessFunction,
} from "eddy";
import { transactionSource, withDefaults, type Transaction } from "./transactions.ts";

/**
 * A rule: alert on a single charge above `limit` ("charge"), or when an account's spending within
 * one clock minute goes over `limit` ("spending": once, on the transaction that crosses it).
 */
export type RuleKind = "charge" | "spending";

/** From `at` (event time) on, rule `rule` is `limit`, or deleted when `limit` is null. */
export interface RuleChange {
  readonly rule: RuleKind;
  readonly at: number;
  readonly limit: number | null;
}

export interface RuleAlert {
  readonly rule: RuleKind;
  readonly limit: number;
  readonly account: string;
  readonly transactionId: number;
  readonly amount: number;
  /** The account's spending in the transaction's clock minute, this transaction included. */
  readonly spentThisMinute: number;
  readonly timestamp: number;
}

export const MINUTE_MS = 60_000;
/** Fewer accounts than the fraud example's, so that spending per minute reaches the limits. */
export const ACCOUNTS = 200;
const OUT_OF_ORDERNESS_MS = 5_000;

/** The rule changes of a run over `count` transactions: rules start, tighten, stop and come back. */
export function ruleChanges(count: number): RuleChange[] {
  const o = withDefaults({ count, accounts: ACCOUNTS });
  const at = (fraction: number): number => o.startMs + Math.floor(count * fraction) * o.intervalMs;
  return [
    { rule: "charge", at: at(0), limit: 2_000 },
    { rule: "spending", at: at(0.1), limit: 4_000 },
    { rule: "charge", at: at(0.3), limit: 1_500 },
    { rule: "spending", at: at(0.5), limit: null },
    { rule: "spending", at: at(0.7), limit: 3_000 },
    { rule: "charge", at: at(0.9), limit: null },
  ];
}

/** The limit of `rule` in force at `timestamp` (the latest change at or before it), if any. */
export function limitAt(changes: Iterable<RuleChange>, timestamp: number): number | null {
  let latest: RuleChange | undefined;
  for (const c of changes) if (c.at <= timestamp && (latest === undefined || c.at > latest.at)) latest = c;
  return latest?.limit ?? null;
}

/** Broadcast state: every change of each rule, by rule. */
export const ruleChangesState = new MapStateDescriptor<RuleKind, RuleChange[]>("rule-changes");

export function ruleChecker(): KeyedBroadcastProcessFunction<string, Transaction, RuleChange, RuleAlert> {
  const pending = new MapStateDescriptor<number, Transaction[]>("pending-by-timestamp");
  const minute = new ValueStateDescriptor<{ start: number; spent: number }>("spent-this-minute");
  return {
    processElement(tx, ctx) {
      // Checked when event time reaches it (onTimer), with the rules in force then.
      const atTime = ctx.getMapState(pending);
      atTime.put(tx.timestamp, [...(atTime.get(tx.timestamp) ?? []), tx]);
      ctx.timerService().registerEventTimeTimer(tx.timestamp);
    },
    processBroadcastElement(change, ctx) {
      const rules = ctx.getBroadcastState(ruleChangesState);
      rules.put(change.rule, [...(rules.get(change.rule) ?? []), change]);
    },
    onTimer(timestamp, ctx, out) {
      const atTime = ctx.getMapState(pending);
      const txs = (atTime.get(timestamp) ?? []).sort((a, b) => a.id - b.id);
      atTime.remove(timestamp);
      const rules = ctx.getBroadcastState(ruleChangesState);
      const chargeLimit = limitAt(rules.get("charge") ?? [], timestamp);
      const spendingLimit = limitAt(rules.get("spending") ?? [], timestamp);
      const spent = ctx.getState(minute);
      for (const tx of txs) {
        const start = tx.timestamp - (tx.timestamp % MINUTE_MS);
        const before = spent.value();
        const total = (before?.start === start ? before.spent : 0) + tx.amount;
        spent.update({ start, spent: total });
        const alert = (rule: RuleKind, limit: number): void =>
          out.collect({ rule, limit, account: tx.account, transactionId: tx.id, amount: tx.amount, spentThisMinute: total, timestamp: tx.timestamp });
        if (chargeLimit !== null && tx.amount > chargeLimit) alert("charge", chargeLimit);
        if (spendingLimit !== null && total > spendingLimit && total - tx.amount <= spendingLimit) alert("spending", spendingLimit);
      }
    },
  };
}

export function dynamicRulesJob(count: number) {
  return defineJob("dynamic-rules", (env) => {
    const rules = env
      .fromCollection(ruleChanges(count))
      .uid("rule-changes-source")
      .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<RuleChange>().withTimestampAssigner((c) => c.at))
      .setParallelism(1)
      .broadcast(ruleChangesState);
    env
      .fromSource(
        transactionSource({ count, accounts: ACCOUNTS }),
        WatermarkStrategy.forBoundedOutOfOrderness<Transaction>(OUT_OF_ORDERNESS_MS).withTimestampAssigner((tx) => tx.timestamp),
        "transactions",
      )
      .uid("transactions")
      .keyBy((tx) => tx.account)
      .connect(rules)
      .process(ruleChecker())
      .uid("rule-checker")
      .name("RuleChecker")
      .print();
  });
}

export default dynamicRulesJob(200_000);
