/**
 * Connected streams: orders and payments are two streams of different types. `connect` +
 * `keyBy` route an order and its payment (whichever arrives first) to the same subtask, where a
 * KeyedCoProcessFunction keeps the one that is waiting in keyed state. An order not paid within 15
 * minutes (event time) of being placed is reported unpaid by an event-time timer.
 *
 *   npx eddy run examples/order-payments.ts
 */
import { defineJob, ValueStateDescriptor, WatermarkStrategy, type KeyedCoProcessFunction } from "eddy";

export interface Order {
  readonly orderId: string;
  readonly customer: string;
  readonly total: number;
  readonly placedAt: number;
}

export interface Payment {
  readonly orderId: string;
  readonly amount: number;
  readonly paidAt: number;
}

export type OrderEvent =
  | { readonly kind: "paid"; readonly orderId: string; readonly customer: string; readonly amount: number; readonly delayMs: number }
  | { readonly kind: "unpaid"; readonly orderId: string; readonly customer: string; readonly total: number };

export const PAYMENT_TIMEOUT_MS = 15 * 60_000;

export function matchPayments(): KeyedCoProcessFunction<string, Order, Payment, OrderEvent> {
  const waitingOrder = new ValueStateDescriptor<Order>("waiting-order");
  const earlyPayment = new ValueStateDescriptor<Payment>("early-payment");
  // The outcome depends only on event time, never on which stream happens to be read first:
  // an order is paid when its payment is at most PAYMENT_TIMEOUT_MS after it was placed.
  const outcome = (order: Order, payment: Payment | undefined): OrderEvent =>
    payment !== undefined && payment.paidAt - order.placedAt <= PAYMENT_TIMEOUT_MS
      ? { kind: "paid", orderId: order.orderId, customer: order.customer, amount: payment.amount, delayMs: payment.paidAt - order.placedAt }
      : { kind: "unpaid", orderId: order.orderId, customer: order.customer, total: order.total };
  return {
    processElement1(order, ctx, out) {
      const payment = ctx.getState(earlyPayment).value();
      if (payment !== undefined) {
        // The payment was read first: the two streams are independent.
        ctx.getState(earlyPayment).clear();
        ctx.timerService().deleteEventTimeTimer(payment.paidAt);
        out.collect(outcome(order, payment));
        return;
      }
      ctx.getState(waitingOrder).update(order);
      ctx.timerService().registerEventTimeTimer(order.placedAt + PAYMENT_TIMEOUT_MS);
    },
    processElement2(payment, ctx, out) {
      const order = ctx.getState(waitingOrder).value();
      if (order === undefined) {
        // Keep it until the order arrives; once event time passes the payment, every order placed
        // before it has been seen (orders are in time order), so the timer drops an orphan.
        ctx.getState(earlyPayment).update(payment);
        ctx.timerService().registerEventTimeTimer(payment.paidAt);
        return;
      }
      if (payment.paidAt - order.placedAt > PAYMENT_TIMEOUT_MS) return; // too late: the timer reports it unpaid
      ctx.getState(waitingOrder).clear();
      ctx.timerService().deleteEventTimeTimer(order.placedAt + PAYMENT_TIMEOUT_MS);
      out.collect(outcome(order, payment));
    },
    onTimer(timestamp, ctx, out) {
      const order = ctx.getState(waitingOrder).value();
      if (order !== undefined && timestamp >= order.placedAt + PAYMENT_TIMEOUT_MS) {
        ctx.getState(waitingOrder).clear();
        out.collect(outcome(order, undefined));
      }
      const payment = ctx.getState(earlyPayment).value();
      if (payment !== undefined && timestamp >= payment.paidAt) ctx.getState(earlyPayment).clear();
    },
  };
}

/** A day of orders; every 7th is never paid, the rest are paid 1 to 40 minutes later. */
export function sampleData(count: number): { orders: Order[]; payments: Payment[] } {
  const start = Date.UTC(2026, 10, 1);
  const orders: Order[] = [];
  const payments: Payment[] = [];
  for (let i = 0; i < count; i++) {
    const placedAt = start + i * 60_000;
    orders.push({ orderId: `order-${i}`, customer: `customer-${i % 13}`, total: 10 + ((i * 37) % 90), placedAt });
    if (i % 7 !== 0) payments.push({ orderId: `order-${i}`, amount: 10 + ((i * 37) % 90), paidAt: placedAt + (1 + ((i * 11) % 40)) * 60_000 });
  }
  payments.sort((a, b) => a.paidAt - b.paidAt);
  return { orders, payments };
}

export function orderPaymentsJob(count: number) {
  return defineJob("order-payments", (env) => {
    const { orders, payments } = sampleData(count);
    const orderStream = env
      .fromCollection(orders)
      .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<Order>().withTimestampAssigner((o) => o.placedAt));
    const paymentStream = env
      .fromCollection(payments)
      .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<Payment>().withTimestampAssigner((p) => p.paidAt));
    orderStream
      .connect(paymentStream)
      .keyBy((o) => o.orderId, (p) => p.orderId)
      .process(matchPayments())
      .uid("match-payments")
      .print();
  });
}

export default orderPaymentsJob(60);
