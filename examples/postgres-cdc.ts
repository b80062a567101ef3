/**
 * Change data capture from PostgreSQL (docs/connectors/postgres-cdc.md): every order row of the
 * table `orders`, and then every change to it, kept as each customer's order count and amount,
 * upserted into `customer_order_totals` of the same database. Insert, update or delete orders
 * while it runs: the totals follow.
 *
 * Needs a server with `wal_level = logical` (and a free replication slot and WAL sender), a user
 * with the REPLICATION attribute, the client package (`npm i pg`) and the tables:
 *
 *   psql "$EDDY_PG_URL" -c 'CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL, amount int NOT NULL)' \
 *     -c 'ALTER TABLE orders REPLICA IDENTITY FULL' \
 *     -c 'CREATE TABLE customer_order_totals (customer text PRIMARY KEY, orders int NOT NULL, amount int NOT NULL)'
 *   EDDY_PG_URL=postgres://user:password@localhost:5432/shop npx eddy run examples/postgres-cdc.ts
 *
 * REPLICA IDENTITY FULL makes the server log the whole row before an update and of a delete: the
 * totals subtract it. The job creates the publication `eddy_orders` and the slot `eddy_orders`;
 * drop the slot when the job is retired: SELECT pg_drop_replication_slot('eddy_orders').
 * (test/postgres-cdc.test.ts runs it against a real server and checks the totals.)
 */
import { defineJob, WatermarkStrategy } from "eddy";
import { isAccumulate, PostgresCdcSource, PostgresSink, type ChangeRecord } from "eddy/postgres";

export interface CustomerTotal {
  readonly customer: string;
  readonly orders: number;
  readonly amount: number;
}

export const TABLES_DDL = [
  "CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL, amount int NOT NULL)",
  "ALTER TABLE orders REPLICA IDENTITY FULL",
  "CREATE TABLE customer_order_totals (customer text PRIMARY KEY, orders int NOT NULL, amount int NOT NULL)",
];

export function postgresCdcJob(connection: string | undefined) {
  return defineJob("postgres-cdc", (env) => {
    if (connection === undefined || connection === "") throw new Error("examples/postgres-cdc.ts needs EDDY_PG_URL, e.g. postgres://user:password@localhost:5432/shop");
    env
      .fromSource(PostgresCdcSource.create({ connection, tables: ["orders"], slot: "eddy_orders", publication: "eddy_orders" }), WatermarkStrategy.noWatermarks<ChangeRecord>(), "orders-cdc")
      // An insert or the row after an update adds; a delete or the row before an update subtracts.
      .map((c): CustomerTotal => {
        const sign = isAccumulate(c) ? 1 : -1;
        return { customer: c.row.customer as string, orders: sign, amount: sign * (c.row.amount as number) };
      })
      .keyBy((t) => t.customer)
      .reduce((a, b) => ({ customer: a.customer, orders: a.orders + b.orders, amount: a.amount + b.amount }))
      .uid("customer-totals")
      .sinkTo(
        PostgresSink.upsert<CustomerTotal>({
          connection,
          table: "customer_order_totals",
          columns: ["customer", "orders", "amount"],
          keyColumns: ["customer"],
          // A customer without orders left: the row goes.
          kind: (t) => (t.orders === 0 ? "delete" : "upsert"),
        }),
        "customer_order_totals",
      );
  });
}

export default postgresCdcJob(process.env.EDDY_PG_URL);
