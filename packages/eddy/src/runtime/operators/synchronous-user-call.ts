/**
 * Eddy's user functions (map, filter, flatMap, process) are synchronous: the operator uses what a
 * call returns, and what it collects, before the next record. An `async` function returns a
 * promise instead (map emitted it, which crosses threads as `{}`; filter kept every record) and
 * collects after it returned (records lost, or emitted after later records and checkpoints).
 * These checks turn both into USER_FUNCTION_ASYNC, pointing to async I/O:
 *
 * - when the job is built, an `async` function is refused (no per-record cost);
 * - per record, a returned native Promise fails the task (a function that is not `async` but
 *   returns one, e.g. `(x) => fetch(x)`); the check is `instanceof Promise`, measured on the
 *   chained path (docs/benchmarks.md), and skipped where the result is `undefined` or `true`;
 * - a collect after the call returned fails the task through its mailbox (it may run in any
 *   callback, where throwing would be an unhandled rejection), and the record is dropped.
 *
 * Not detected: thenables that are not native promises, and collects after the task finished.
 */
import { EddyError } from "../../core/errors.ts";
import type { OperatorContext } from "../operator.ts";

const HINT =
  "Eddy calls user functions synchronously and uses what they return or collect before the next record; for calls that wait (HTTP, databases), use async I/O (AsyncDataStream.orderedWait / unorderedWait), which keeps order, watermarks and checkpoints";

const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as unknown;
const AsyncGeneratorFunction = Object.getPrototypeOf(async function* () {}).constructor as unknown;

/** Throws (config) if `fn` is an `async` function; `call` names where it was given. */
export function rejectAsyncFunction(fn: unknown, call: string): void {
  if (typeof fn !== "function") return;
  const constructor = (fn as { constructor?: unknown }).constructor;
  if (constructor === AsyncFunction || constructor === AsyncGeneratorFunction) {
    throw new EddyError("USER_FUNCTION_ASYNC", `${call} was given an async function. ${HINT}.`, { domain: "config" });
  }
}

/** The same check for the named methods of a function object (processElement, onTimer...). */
export function rejectAsyncMethods(fn: object, call: string, methods: readonly string[]): void {
  for (const m of methods) rejectAsyncFunction((fn as Record<string, unknown>)[m], `${call}: ${m}`);
}

/**
 * The error for a call that returned `promise`; marks the promise handled, so that its rejection,
 * if any, is not an unhandled rejection on top of this error.
 */
export function asyncResultError(ctx: OperatorContext, call: string, promise: Promise<unknown>): EddyError {
  promise.then(undefined, () => {});
  const { operatorName: operator, subtaskIndex: subtask } = ctx;
  return new EddyError("USER_FUNCTION_ASYNC", `${call} in operator '${operator}' (subtask ${subtask}) returned a promise. ${HINT}.`, {
    domain: "user",
    operator,
    subtask,
  });
}

/** Fails the task from its mailbox: `out.collect` ran after the user call had returned. */
export function failCollectAfterReturn(ctx: OperatorContext, call: string): void {
  const { operatorName: operator, subtaskIndex: subtask } = ctx;
  const error = new EddyError(
    "USER_FUNCTION_ASYNC",
    `${call} in operator '${operator}' (subtask ${subtask}) called out.collect after it returned; the record was dropped. ${HINT}.`,
    { domain: "user", operator, subtask },
  );
  ctx.postMail(() => {
    throw error;
  });
}
