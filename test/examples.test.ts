/** The examples run in CI, and their output is checked against a direct computation. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { runJob } from "eddy/testing";
import wordCount from "../examples/word-count.ts";
import { fraudDetectionJob, LARGE_AMOUNT, SMALL_AMOUNT, WINDOW_MS, type Alert } from "../examples/fraud-detection.ts";
import { orderPaymentsJob, PAYMENT_TIMEOUT_MS, sampleData, type OrderEvent } from "../examples/order-payments.ts";
import { transactionAt, withDefaults, type Transaction } from "../examples/transactions.ts";
// Starts its own customer service on loopback (CUSTOMERS_URL is not set here).
import asyncEnrichment, { CUSTOMERS, orderAt, ORDERS, UNREACHABLE_CUSTOMER, type EnrichedOrder } from "../examples/async-enrichment/enrich-orders.ts";
import { customer } from "../examples/async-enrichment/customer-service.ts";
import { ACCOUNTS, dynamicRulesJob, MINUTE_MS, limitAt, ruleChanges, type RuleAlert, type RuleKind } from "../examples/dynamic-rules.ts";

async function printed<T>(job: Parameters<typeof runJob>[0], parallelism = 1): Promise<T[]> {
  const lines: string[] = [];
  // With the check of `copy: "none"` states: the examples keep that option's promise.
  const handle = runJob(job, { parallelism, stdout: (line) => lines.push(line), verifyCopyNone: true });
  await handle.done;
  return lines.map((l) => JSON.parse(l) as T);
}

test("examples/word-count.ts prints the rolling count of every word", async () => {
  const out = await printed<{ word: string; count: number }>(wordCount);
  assert.deepEqual(out, [
    { word: "to", count: 1 },
    { word: "be", count: 1 },
    { word: "or", count: 1 },
    { word: "not", count: 1 },
    { word: "to", count: 2 },
    { word: "be", count: 2 },
  ]);
});

/** The generated transactions of each account, sorted by (timestamp, id): the order event time gives them. */
function historyByAccount(o: ReturnType<typeof withDefaults>): Transaction[][] {
  const byAccount = new Map<string, Transaction[]>();
  for (let i = 0; i < o.count; i++) {
    const tx = transactionAt(i, o);
    byAccount.set(tx.account, [...(byAccount.get(tx.account) ?? []), tx]);
  }
  return [...byAccount.values()].map((txs) => txs.sort((a, b) => a.timestamp - b.timestamp || a.id - b.id));
}

/** The batch oracle: per account, the rule over the history sorted by (timestamp, id). */
function fraudOracle(count: number): Alert[] {
  const alerts: Alert[] = [];
  for (const txs of historyByAccount(withDefaults({ count }))) {
    let last: Transaction | undefined;
    for (const tx of txs) {
      if (last !== undefined && tx.timestamp - last.timestamp > WINDOW_MS) last = undefined;
      if (tx.amount > LARGE_AMOUNT && last !== undefined) {
        alerts.push({ account: tx.account, smallTransactionId: last.id, largeTransactionId: tx.id, amount: tx.amount, timestamp: tx.timestamp });
        last = undefined;
      } else if (tx.amount < SMALL_AMOUNT) {
        last = tx;
      }
    }
  }
  return alerts;
}

const byId = (a: Alert, b: Alert) => a.largeTransactionId - b.largeTransactionId;

for (const parallelism of [1, 2]) {
  test(`examples/fraud-detection.ts finds exactly the alerts of a batch recomputation (parallelism ${parallelism})`, async () => {
    const count = 60_000;
    const out = await printed<Alert | { late: Transaction }>(fraudDetectionJob(count), parallelism);
    assert.ok(out.every((r) => !("late" in r)), "the generator's disorder is within the watermark bound");
    const expected = fraudOracle(count).sort(byId);
    assert.ok(expected.length > 20, "the data produces alerts");
    assert.deepEqual((out as Alert[]).sort(byId), expected);
  });
}

test("examples/order-payments.ts reports each order paid or unpaid by event time alone", async () => {
  const count = 500;
  const out = await printed<OrderEvent>(orderPaymentsJob(count), 2);
  const { orders, payments } = sampleData(count);
  const paidAt = new Map(payments.map((p) => [p.orderId, p.paidAt]));
  const expected = orders
    .map((o) => {
      const at = paidAt.get(o.orderId);
      return `${o.orderId}:${at !== undefined && at - o.placedAt <= PAYMENT_TIMEOUT_MS ? "paid" : "unpaid"}`;
    })
    .sort();
  assert.deepEqual(out.map((e) => `${e.orderId}:${e.kind}`).sort(), expected);
});

test("examples/page-views.ts: every click is in its minute's final count or on the late side output", async () => {
  const { pageViewsJob, clickAt } = await import("../examples/page-views.ts");
  const clicks = 6_000;
  for (const parallelism of [1, 2]) {
    const out = await printed<{ kind: string; page: string; minute?: string; views?: number; ts?: string }>(pageViewsJob(clicks), parallelism);
    const expected = new Map<string, number>();
    for (let i = 0; i < clicks; i++) {
      const c = clickAt(i);
      const minute = new Date(c.ts - (c.ts % 60_000)).toISOString();
      expected.set(`${c.page}|${minute}`, (expected.get(`${c.page}|${minute}`) ?? 0) + 1);
    }
    const finals = new Map<string, number>();
    for (const o of out) if (o.kind === "views") finals.set(`${o.page}|${o.minute}`, o.views!); // the last firing wins
    for (const o of out) {
      if (o.kind !== "late") continue;
      const ts = Date.parse(o.ts!);
      const id = `${o.page}|${new Date(ts - (ts % 60_000)).toISOString()}`;
      finals.set(id, (finals.get(id) ?? 0) + 1);
    }
    assert.deepEqual(finals, expected);
    assert.ok(out.some((o) => o.kind === "trending") && out.some((o) => o.kind === "session"));
  }
});

test("examples/async-enrichment: every order enriched with its customer (retried past 500s), the unreachable one by the timeout fallback, in order", async () => {
  const out = await printed<EnrichedOrder>(asyncEnrichment, 1);
  const expected = Array.from({ length: ORDERS }, (_, i): EnrichedOrder => {
    const order = orderAt(i + 1);
    if (order.customerId === UNREACHABLE_CUSTOMER) return { ...order, customerName: null, tier: "unknown" };
    const c = customer(order.customerId);
    return { ...order, customerName: c.name, tier: c.tier };
  });
  assert.ok(CUSTOMERS > UNREACHABLE_CUSTOMER && expected.some((o) => o.customerName === null));
  assert.deepEqual(out, expected);
});

/** The batch oracle of dynamic-rules: per account in (timestamp, id) order, the rules in force at each transaction's time. */
function dynamicRulesOracle(count: number): RuleAlert[] {
  const changes = ruleChanges(count);
  const of = (rule: RuleKind) => changes.filter((c) => c.rule === rule);
  const alerts: RuleAlert[] = [];
  for (const txs of historyByAccount(withDefaults({ count, accounts: ACCOUNTS }))) {
    let minute = -1;
    let spent = 0;
    for (const tx of txs) {
      const start = Math.floor(tx.timestamp / MINUTE_MS) * MINUTE_MS;
      spent = (start === minute ? spent : 0) + tx.amount;
      minute = start;
      const base = { account: tx.account, transactionId: tx.id, amount: tx.amount, spentThisMinute: spent, timestamp: tx.timestamp };
      const charge = limitAt(of("charge"), tx.timestamp);
      const spending = limitAt(of("spending"), tx.timestamp);
      if (charge !== null && tx.amount > charge) alerts.push({ rule: "charge", limit: charge, ...base });
      if (spending !== null && spent > spending && spent - tx.amount <= spending) alerts.push({ rule: "spending", limit: spending, ...base });
    }
  }
  return alerts;
}

test("examples/dynamic-rules.ts raises exactly the alerts of the rules in force at each transaction (parallelism 1 and 2)", async () => {
  const count = 40_000;
  const key = (a: RuleAlert): string => `${a.transactionId}:${a.rule}:${a.limit}:${a.spentThisMinute}`;
  const expected = dynamicRulesOracle(count).map(key).sort();
  // The data must exercise every rule change: both rules alert, and each limit in force applies.
  const limits = new Set(dynamicRulesOracle(count).map((a) => `${a.rule}:${a.limit}`));
  assert.deepEqual([...limits].sort(), ["charge:1500", "charge:2000", "spending:3000", "spending:4000"]);
  for (const parallelism of [1, 2]) {
    const out = await printed<RuleAlert>(dynamicRulesJob(count), parallelism);
    assert.deepEqual(out.map(key).sort(), expected, `parallelism ${parallelism}`);
  }
});
