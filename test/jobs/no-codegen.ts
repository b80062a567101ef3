/**
 * A job for the test that Eddy runs where the process forbids compiling code from strings
 * (`node --disallow-code-generation-from-strings`): chained edges, copies of objects into state and
 * (on worker threads) the default codec all fall back to their general paths. The script
 * no-codegen-run.ts runs it.
 */
import { defineJob } from "eddy";
import { collectSink } from "eddy/testing";

export const RECORDS = 3_000;
export const KEYS = 17;

export interface Row {
  key: number;
  value: number;
  label: string;
  /** Whether the thread that built the record could compile code from strings. */
  codegen: boolean;
}

export function canCompile(): boolean {
  try {
    new Function("return 1");
    return true;
  } catch {
    return false;
  }
}

export const noCodegen = defineJob("no-codegen", (env) => {
  const rows = env
    .fromSequence(0, RECORDS - 1)
    .map((n): Row => ({ key: n % KEYS, value: n % 5, label: `item-${n % 13}`, codegen: canCompile() }));
  // A fan-out: the map's output has two targets.
  rows.filter((r) => r.value === 4).sinkTo(collectSink("fours"));
  rows
    .filter((r) => r.value !== 4)
    .keyBy((r) => r.key)
    .reduce((a, b) => ({ key: a.key, value: a.value + b.value, label: b.label, codegen: a.codegen || b.codegen }))
    .uid("sum")
    .sinkTo(collectSink("out"));
});

/** The last row per key, by key. */
export function finalRows(rows: readonly Row[]): Row[] {
  const last = new Map<number, Row>();
  for (const r of rows) last.set(r.key, r);
  return [...last.values()].sort((a, b) => a.key - b.key);
}
