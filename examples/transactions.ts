/**
 * A deterministic, parallel source of card transactions for the examples: a custom Source with
 * one split per generator range. Transaction i is computed from i alone (a seeded hash), so any
 * range can be produced by any reader, in any order, and replayed exactly from a position.
 */
import type { Source, SourceReader } from "eddy";

export interface Transaction {
  readonly id: number;
  readonly account: string;
  /** Amount in dollars. */
  readonly amount: number;
  /** Event time (ms since the epoch). */
  readonly timestamp: number;
}

export interface TransactionSourceOptions {
  readonly count: number;
  readonly accounts?: number;
  /** Event time between consecutive transactions. */
  readonly intervalMs?: number;
  /** Transactions arrive up to this much later than their event time order says. */
  readonly maxDelayMs?: number;
  readonly startMs?: number;
}

/** 32-bit integer hash (a murmur3 finalizer): uniform bits from a counter. */
function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

export function transactionAt(i: number, o: Required<TransactionSourceOptions>): Transaction {
  const r1 = mix(i * 4 + 1);
  const r2 = mix(i * 4 + 2);
  const r3 = mix(i * 4 + 3);
  const account = `acct-${r1 % o.accounts}`;
  // Most amounts are ordinary; 2% are tiny "card testing" charges and 1% are large.
  const bucket = r2 % 100;
  const cents = bucket < 2 ? r3 % 100 : bucket < 3 ? 50_000 + (r3 % 200_000) : 1_000 + (r3 % 29_000);
  const delay = r3 % (o.maxDelayMs + 1);
  return { id: i, account, amount: cents / 100, timestamp: o.startMs + i * o.intervalMs + delay };
}

interface RangeSplit {
  readonly splitId: string;
  /** Next transaction index to emit. */
  readonly position: number;
  /** End of the range (exclusive). */
  readonly end: number;
}

export function withDefaults(options: TransactionSourceOptions): Required<TransactionSourceOptions> {
  return { accounts: 2000, intervalMs: 10, maxDelayMs: 5000, startMs: Date.UTC(2026, 0, 1), ...options };
}

export function transactionSource(options: TransactionSourceOptions): Source<Transaction, RangeSplit> {
  const o = withDefaults(options);
  const splitCount = 8;
  return {
    boundedness: "bounded",
    createEnumerator: (ctx) => {
      const splits: RangeSplit[] = [];
      for (let s = 0; s < splitCount; s++) {
        splits.push({
          splitId: `range-${s}`,
          position: Math.floor((o.count * s) / splitCount),
          end: Math.floor((o.count * (s + 1)) / splitCount),
        });
      }
      return {
        addReader(subtask) {
          ctx.assignSplits(subtask, splits.filter((_, i) => i % ctx.parallelism === subtask));
          ctx.signalNoMoreSplits(subtask);
        },
      };
    },
    createReader: (): SourceReader<Transaction, RangeSplit> => {
      const queue: { splitId: string; position: number; end: number }[] = [];
      let noMore = false;
      return {
        pollNext(output) {
          const split = queue[0];
          if (split === undefined) return noMore ? "end" : "nothing";
          const stop = Math.min(split.end, split.position + 1000);
          for (let i = split.position; i < stop; i++) output.collect(transactionAt(i, o));
          split.position = stop;
          if (split.position >= split.end) queue.shift();
          return queue.length > 0 ? "more" : noMore ? "end" : "nothing";
        },
        isAvailable: () => Promise.resolve(),
        addSplits: (splits) => void queue.push(...splits.map((s) => ({ ...s }))),
        notifyNoMoreSplits: () => void (noMore = true),
        snapshotState: () => queue.map((s) => ({ ...s })),
      };
    },
  };
}
