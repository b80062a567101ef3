/**
 * Compile-time assertions for the type tests in this folder. These files are type-checked by
 * `npm run typecheck` (the root tsconfig includes test/**) and never run: they hold no `*.test.ts`.
 * A `// @ts-expect-error` that stops failing is itself an error, so a loosened signature breaks
 * `npm test`.
 */
import type { DataStream } from "eddy";

/** True when A and B are the same type (not merely assignable either way; `any` equals only `any`). */
export type Equal<A, B> = (<G>() => G extends A ? 1 : 2) extends <G>() => G extends B ? 1 : 2 ? true : false;

/**
 * `expectType<Expected>()(value)` compiles only when `value`'s type is exactly Expected: a mismatch
 * asks for two more arguments, which names both types in the error.
 */
export function expectType<Expected>() {
  return <Actual>(_value: Actual, ..._mismatch: Equal<Actual, Expected> extends true ? [] : [actual: Actual, expected: Expected]): void => {};
}

/** `expectRecords<T>()(stream)`: the stream's records are exactly T. */
export function expectRecords<Expected>() {
  return <T>(_stream: DataStream<T>, ..._mismatch: Equal<T, Expected> extends true ? [] : [actual: T, expected: Expected]): void => {};
}
