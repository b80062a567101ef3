/**
 * Running totals per customer, upserted into PostgreSQL (docs/connectors/postgres.md).
 *
 * Needs a PostgreSQL server, given by the environment variable EDDY_PG_URL, the client package
 * (`npm i pg`) and the table:
 *
 *   psql "$EDDY_PG_URL" -c 'CREATE TABLE customer_totals (customer text PRIMARY KEY, orders int NOT NULL, amount int NOT NULL)'
 *   EDDY_PG_URL=postgres://user:password@localhost:5432/shop npx eddy run examples/postgres-upsert.ts
 *
 * Each order updates its customer's row (INSERT ... ON CONFLICT (customer) DO UPDATE); a customer
 * whose orders were all refunded is deleted (a changelog record). Run it twice, or kill it and
 * resume it from a checkpoint: the table ends the same, since upserts by key are idempotent.
 * (test/postgres-sink.test.ts runs it against a real server and checks the table.)
 */
import { defineJob } from "eddy";
import { PostgresSink } from "eddy/postgres";

interface Order {
  readonly customer: string;
  /** Negative for a refund. */
  readonly amount: number;
}

export interface CustomerTotal {
  readonly customer: string;
  readonly orders: number;
  readonly amount: number;
}

export const TABLE_DDL = "CREATE TABLE customer_totals (customer text PRIMARY KEY, orders int NOT NULL, amount int NOT NULL)";

/** 1,000 orders over 20 customers; customer c7's orders are 10, then refunded (-10), in turn. */
export const orders = (): Order[] =>
  Array.from({ length: 1_000 }, (_, i) => {
    const customer = `c${(i * 7) % 20}`;
    if (customer !== "c7") return { customer, amount: ((i * 37) % 100) + 1 };
    return { customer, amount: Math.floor(i / 20) % 2 === 0 ? 10 : -10 };
  });

export function postgresUpsertJob(connection: string | undefined) {
  return defineJob("postgres-upsert", (env) => {
    if (connection === undefined || connection === "") throw new Error("examples/postgres-upsert.ts needs EDDY_PG_URL, e.g. postgres://user:password@localhost:5432/shop");
    env
      .fromCollection(orders())
      .map((o): CustomerTotal => ({ customer: o.customer, orders: 1, amount: o.amount }))
      .keyBy((t) => t.customer)
      .reduce((a, b) => ({ customer: a.customer, orders: a.orders + b.orders, amount: a.amount + b.amount }))
      .uid("customer-totals")
      .sinkTo(
        PostgresSink.upsert<CustomerTotal>({
          connection,
          table: "customer_totals",
          columns: ["customer", "orders", "amount"],
          keyColumns: ["customer"],
          // Nothing left once every order was refunded: the row goes.
          kind: (t) => (t.amount === 0 ? "delete" : "upsert"),
        }),
        "customer_totals",
      );
  });
}

export default postgresUpsertJob(process.env.EDDY_PG_URL);
