/**
 * Flink's published Nexmark throughput per core: the anchor Eddy is measured against.
 *
 * Source: ../shared/BENCHMARKS.md, "Flink's published per-core figures", copied from the
 * nexmark/nexmark guide: Flink SQL, 8 TaskManagers × 1 slot, exactly-once checkpoints, generator
 * in the source, blackhole sink; events / (cores used × seconds). V1: Flink 1.13–2.0 on RocksDB,
 * checkpoint every 180 s. V2: Flink 2.x on ForSt, checkpoint every 30 s. q9, q10 and q13 have no
 * V1 figure there; q6 has none.
 */
export interface FlinkPerCore {
  /** Events per second per core, Flink 1.13–2.0 (RocksDB); not published for q9, q10, q13. */
  readonly v1?: number;
  /** Events per second per core, Flink 2.x (ForSt): the figure issue 5 sets targets against. */
  readonly v2: number;
}

export const FLINK_PER_CORE: Readonly<Record<string, FlinkPerCore>> = {
  q0: { v1: 155_000, v2: 378_000 },
  q1: { v1: 158_000, v2: 395_000 },
  q2: { v1: 175_000, v2: 414_000 },
  q3: { v1: 152_000, v2: 219_000 },
  q4: { v1: 34_000, v2: 28_000 },
  q5: { v1: 22_000, v2: 75_000 },
  q7: { v1: 12_000, v2: 23_000 },
  q8: { v1: 146_000, v2: 162_000 },
  q9: { v2: 14_000 },
  q10: { v2: 133_000 },
  q11: { v1: 40_000, v2: 46_000 },
  q12: { v1: 76_000, v2: 194_000 },
  q13: { v2: 188_000 },
  q14: { v1: 161_000, v2: 259_000 },
  q15: { v1: 72_000, v2: 168_000 },
  q16: { v1: 19_000, v2: 45_000 },
  q17: { v1: 117_000, v2: 161_000 },
  q18: { v1: 54_000, v2: 65_000 },
  q19: { v1: 44_000, v2: 43_000 },
  q20: { v1: 19_000, v2: 18_000 },
  q21: { v1: 99_000, v2: 147_000 },
  q22: { v1: 130_000, v2: 211_000 },
};

/** Issue 5's targets: Eddy per core ≥ this × Flink V2 per core, on every query ... */
export const FLINK_V2_TARGET_FACTOR = 3;
/** ... and, on the stateless queries, the hand-written loop ≤ this × Eddy per core. */
export const LOOP_TARGET_FACTOR = 3;
