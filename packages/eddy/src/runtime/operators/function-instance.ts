/**
 * Each subtask gets its own instance of a user function object, made in one of two ways:
 *
 * - **A factory** (`process(() => new MyFunction())`, or `functionFactory(() => new MyFunction())`
 *   where a plain function means something else): called once per subtask, and again for every
 *   restart attempt, when the operator is created. The instance is whatever the factory returns,
 *   so classes with `#private` fields and constructor logic work.
 * - **An object**: Flink achieves per-subtask instances by serializing the function; Eddy rebuilds
 *   the graph in every worker (docs/design/architecture.md, "A job is a module"), but several
 *   subtasks of one operator can share a worker, so the object the user passed is copied per
 *   subtask: same prototype (class methods), own copies of its own properties. Fields assigned in
 *   `open()` are therefore per subtask, as a Flink user expects. The copy is shallow: an object
 *   held in a field is shared, like a closure variable. A copy has no `#private` slots
 *   (JavaScript cannot copy them), hence factories.
 *
 * Which is which: where the API expects a function *object* (process functions, a window's
 * ProcessWindowFunction), any function is a factory, and must take no parameters. Where a plain
 * function already means something (a window function `(key, window, input, out)` beside
 * reduce/aggregate), only `functionFactory(...)` is a factory, and a function without parameters is
 * refused as ambiguous.
 */
import { EddyError, userFunctionError } from "../../core/errors.ts";
import type { OperatorContext } from "../operator.ts";

const FACTORY: unique symbol = Symbol("eddy.functionFactory");

/** A factory marked as such by `functionFactory`: usable wherever a function object is. */
export interface FunctionFactory<F extends object> {
  readonly [FACTORY]: () => F;
}

/** What APIs that take a function object accept: the object, a zero-argument factory, or a marked factory. */
export type FunctionObjectOrFactory<F extends object> = F | (() => F) | FunctionFactory<F>;

/**
 * Marks `create` as a factory of function objects: each subtask calls it once (and once per
 * restart attempt). Needed only where a plain function would mean something else (a window
 * function beside `reduce`/`aggregate`); elsewhere `() => new MyFunction()` is enough.
 */
export function functionFactory<F extends object>(create: () => F): FunctionFactory<F> {
  if (typeof create !== "function") {
    throw new EddyError("INVALID_FUNCTION_FACTORY", `functionFactory needs a function () => object, got ${describe(create)}`);
  }
  return Object.freeze({ [FACTORY]: create });
}

export function isFunctionFactory(value: unknown): value is FunctionFactory<object> {
  return typeof value === "object" && value !== null && FACTORY in value;
}

/**
 * Build-time check of an argument that must be a function object with `methods`, a zero-argument
 * factory, or a `functionFactory`; returns it as an object or a marked factory, for
 * `perSubtaskInstance`. A function with parameters is refused: it is neither (it looks like the
 * method itself, passed where the object was meant).
 */
export function requireFunctionObject<F extends object>(fn: FunctionObjectOrFactory<F>, what: string, methods: readonly string[]): F | FunctionFactory<F> {
  if (isFunctionFactory(fn)) return fn as FunctionFactory<F>;
  if (typeof fn === "function") {
    if (fn.length !== 0) {
      throw new EddyError(
        "INVALID_FUNCTION_FACTORY",
        `${what} needs an object with ${methods.map((m) => `${m}()`).join(" and ")}, or a factory () => object called once per subtask; ` +
          `got a function of ${fn.length} parameter${fn.length === 1 ? "" : "s"}`,
      );
    }
    return functionFactory(fn as () => F);
  }
  const missing = missingMethod(fn, methods);
  if (missing !== undefined) {
    throw new EddyError(
      "INVALID_FUNCTION_FACTORY",
      `${what} needs an object with a ${missing}() method, or a factory () => object; got ${describe(fn)}`,
    );
  }
  return fn;
}

/**
 * The instance of subtask `ctx` (see the file comment): the factory's result, checked to have
 * `methods` (INVALID_FUNCTION_FACTORY naming the operator and subtask), or a copy of the object.
 * Called once per subtask and attempt, when the operator is created.
 */
export function perSubtaskInstance<F extends object>(fn: F | FunctionFactory<F>, ctx?: OperatorContext, methods: readonly string[] = []): F {
  if (!isFunctionFactory(fn)) {
    const copy = Object.create(Object.getPrototypeOf(fn) as object | null) as F;
    return Object.defineProperties(copy, Object.getOwnPropertyDescriptors(fn));
  }
  const where = ctx === undefined ? "" : ` (operator '${ctx.operatorName}', subtask ${ctx.subtaskIndex})`;
  let instance: unknown;
  try {
    instance = (fn as FunctionFactory<F>)[FACTORY]();
  } catch (e) {
    throw ctx === undefined ? e : userFunctionError(ctx, e);
  }
  const missing = missingMethod(instance, methods);
  if (missing !== undefined) {
    throw new EddyError("INVALID_FUNCTION_FACTORY", `a function factory returned ${describe(instance)}, which has no ${missing}() method${where}`, {
      domain: "user",
      ...(ctx === undefined ? {} : { operator: ctx.operatorName, subtask: ctx.subtaskIndex }),
    });
  }
  return instance as F;
}

/** The first of `methods` that `value` is not an object with; undefined when it has them all. */
function missingMethod(value: unknown, methods: readonly string[]): string | undefined {
  if (value === null || typeof value !== "object") return methods[0] ?? "(an object)";
  for (const m of methods) if (typeof (value as Record<string, unknown>)[m] !== "function") return m;
  return undefined;
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (typeof v === "function") return `a function of ${v.length} parameters`;
  if (typeof v === "object") return `an object (${Object.getPrototypeOf(v)?.constructor?.name ?? "no prototype"})`;
  return typeof v;
}
