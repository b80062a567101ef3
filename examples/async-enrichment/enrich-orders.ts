/**
 * Async I/O: every order is enriched with its customer, looked up over HTTP, with up to 50
 * lookups in flight per subtask instead of one at a time. The customer service is flaky on
 * purpose (customer-service.ts): the first lookup of every fifth customer fails with 500 and is
 * retried with exponential backoff; a few customers answer slowly; customer 13 never answers in
 * time, and its orders get a fallback from the function's timeout handler. Results come out in
 * order (orderedWait); unorderedWait would let fast answers overtake slow ones between
 * watermarks.
 *
 *   npx eddy run examples/async-enrichment/enrich-orders.ts -p 2
 *
 * Without CUSTOMERS_URL the job starts its own customer service on 127.0.0.1 (a random port) in
 * the process that runs it; set CUSTOMERS_URL=http://host:port to use another.
 */
import { isMainThread } from "node:worker_threads";
import type { Agent } from "node:http";
import { AsyncDataStream, defineJob, type AsyncFunction } from "eddy";
import { getJson, HttpError, keepAliveAgent, startCustomerService, type Customer } from "./customer-service.ts";

export const ORDERS = Number(process.env.ORDERS ?? 1_000);
export const CUSTOMERS = 200;
/** The customer whose lookups never answer in time. */
export const UNREACHABLE_CUSTOMER = 13;
export const LOOKUP_TIMEOUT_MS = 500;

if (isMainThread && (process.env.CUSTOMERS_URL ?? "") === "") {
  // Worker threads inherit the environment, so they use this service too.
  const service = await startCustomerService({ failFirstEvery: 5, slowEvery: 7, slowMs: 20, hangIds: [UNREACHABLE_CUSTOMER] });
  process.env.CUSTOMERS_URL = service.url;
}

export interface Order {
  readonly orderId: number;
  readonly customerId: number;
  readonly amount: number;
}

export interface EnrichedOrder extends Order {
  /** null: the lookup timed out. */
  readonly customerName: string | null;
  readonly tier: Customer["tier"] | "unknown";
}

/** The n-th order (deterministic). */
export const orderAt = (n: number): Order => ({ orderId: n, customerId: (n * 37) % CUSTOMERS, amount: (n * 7) % 100 + 1 });

/** Looks up an order's customer; one keep-alive HTTP agent per subtask. */
export class CustomerLookup implements AsyncFunction<Order, EnrichedOrder> {
  url = "";
  agent: Agent | undefined;

  open(): void {
    this.url = process.env.CUSTOMERS_URL ?? "";
    this.agent = keepAliveAgent(50);
  }

  async asyncInvoke(order: Order): Promise<EnrichedOrder[]> {
    const c = await getJson<Customer>(this.agent!, `${this.url}/customers/${order.customerId}`);
    return [{ ...order, customerName: c.name, tier: c.tier }];
  }

  timeout(order: Order): EnrichedOrder[] {
    return [{ ...order, customerName: null, tier: "unknown" }];
  }

  close(): void {
    this.agent?.destroy();
  }
}

export default defineJob("async-enrichment", (env) => {
  const orders = env.fromSequence(1, ORDERS).map(orderAt);
  AsyncDataStream.orderedWait(orders, new CustomerLookup(), {
    timeoutMs: LOOKUP_TIMEOUT_MS,
    capacity: 50,
    // A 5xx may pass on a second try; anything else (a 404, a bad answer) will not.
    retry: { maxAttempts: 4, backoff: "exponential", delayMs: 10, maxDelayMs: 200, ifError: (e) => e instanceof HttpError && e.status >= 500 },
  })
    .name("Customer lookup")
    .print();
});
