/**
 * Deep copy of values that Eddy keeps on the heap (state values, buffered records), so that user
 * code mutating an object after handing it over, or after reading it, never changes what Eddy
 * holds.
 *
 * Supported: primitives (returned as is — the fast path), plain objects (prototype
 * `Object.prototype` or `null`; own enumerable string-keyed properties. Symbol-keyed properties
 * are not data: a copy may or may not carry them (the generated copiers below do not), and a
 * checkpoint never does, as with structuredClone), arrays (indexed, holes
 * become `undefined`, extra non-index properties are dropped), `Map`, `Set`, `Date`, and through
 * `structuredClone`: typed arrays, `DataView`, `ArrayBuffer`, `RegExp`, `Error` and boxed
 * primitives. Node `Buffer`s stay `Buffer`s. Functions are returned as is (they are not data).
 *
 * Not supported: instances of user classes, which would silently lose their prototype (and their
 * methods) in a copy; they raise `VALUE_NOT_COPYABLE` instead. Declare state holding such values
 * with `copy: "none"` and never mutate them.
 *
 * Shared sub-objects are copied once per reference (a DAG becomes a tree); getters are read and
 * stored as values. Cyclic or very deep (> 64 levels) values are handed to `structuredClone` as a
 * whole, which preserves cycles.
 *
 * Plain objects of the shapes copied most are copied by a function generated per shape (its keys
 * in order), which builds the copy as one object literal: the copy gets the hidden class user code
 * gives the same record, and costs ~7–10 ns. A spread (`{ ...value }`) costs ~50–60 ns when the
 * value is itself a copy or a record a reduce function mutated, as a rolling aggregation's
 * accumulator is on every record (measured: a loop copying a mutated accumulator per record,
 * Node 20). The RECENT_SHAPES shapes with a copier are tried in turn, each by a for-in walk over
 * the value's keys (no allocation). Other values are spread, and every SAMPLE_EVERY-th of them
 * installs a copier for its shape (replacing the oldest), so a workload of a few shapes ends up
 * on copiers and one of many shapes (e.g. objects used as maps, with varying keys) stays on the
 * spread instead of paying Object.keys on every copy (measured: two shapes alternating, with a
 * single-shape cache, ~300 ns per copy). The plain-object test reads `constructor` once, so a
 * getter of that name (or a Proxy's get trap) runs once more than the copy itself needs.
 */

import { compileFunction, mayCompile } from "../core/codegen.ts";
import { EddyError } from "../core/errors.ts";
import { isPlainObject } from "../core/plain-object.ts";

const MAX_FAST_DEPTH = 64;
/** Generated copiers kept (compiled once per shape); further shapes are always spread. */
const MAX_COPIERS = 256;
/** Objects with more own keys are spread (a literal that large is not worth generating). */
const MAX_COPIER_FIELDS = 128;
/** Shapes tried before a value is spread. */
const RECENT_SHAPES = 4;
/** One spread value in this many installs a copier for its shape. */
const SAMPLE_EVERY = 16;

/** Copies a plain object of one shape: one literal, nested objects through `copyChild`. */
type Copier = (value: Record<string, unknown>, depth: number) => Record<string, unknown>;

/** Generated copiers by shape (JSON of the key list). */
const copiers = new Map<string, Copier>();
/** The shapes tried first (their keys in order) and their copiers; `nextRecent` is replaced next. */
const recentKeys: (readonly string[])[] = [];
const recentCopiers: Copier[] = [];
let nextRecent = 0;
let spreadSinceSample = 0;

/** Thrown inside the fast path when a value is too deep (or cyclic); the top level retries. */
class TooDeep {}
const TOO_DEEP = new TooDeep();

/** Returns a deep copy of `value` that shares no mutable object with it. */
export function copyValue<T>(value: T): T {
  // hot path: primitives need no copy
  if (typeof value !== "object" || value === null) return value;
  try {
    return copyObject(value, 0) as T;
  } catch (e) {
    if (e !== TOO_DEEP) throw e;
    return cloneWhole(value);
  }
}

function copyObject(value: object, depth: number): unknown {
  if (depth > MAX_FAST_DEPTH) throw TOO_DEEP;
  // hot path: plain objects first (most records); see isPlainObject for why this is cheap.
  if (isPlainObject(value)) return copyObjectPrototyped(value as Record<string, unknown>, depth);
  if (Array.isArray(value)) {
    const n = value.length;
    const out = new Array<unknown>(n);
    for (let i = 0; i < n; i++) {
      const e: unknown = value[i];
      out[i] = typeof e !== "object" || e === null ? e : copyObject(e, depth + 1);
    }
    return out;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto === null) return copyNested(Object.assign(Object.create(null) as Record<string, unknown>, value), depth);
  if (proto === Map.prototype) {
    const out = new Map<unknown, unknown>();
    for (const [k, v] of value as Map<unknown, unknown>) out.set(copyChild(k, depth), copyChild(v, depth));
    return out;
  }
  if (proto === Set.prototype) {
    const out = new Set<unknown>();
    for (const v of value as Set<unknown>) out.add(copyChild(v, depth));
    return out;
  }
  if (proto === Date.prototype) return new Date((value as Date).getTime());
  if (Buffer.isBuffer(value)) return Buffer.from(value);
  if (isStructuredCloneable(value)) return structuredClone(value);
  throw notCopyable(value);
}

/** Copies a plain object whose prototype is Object.prototype. */
function copyObjectPrototyped(value: Record<string, unknown>, depth: number): Record<string, unknown> {
  // hot path: a shape with a copier (usually the first one tried).
  for (let r = 0; r < recentKeys.length; r++) {
    if (hasShape(value, recentKeys[r]!)) return recentCopiers[r]!(value, depth);
  }
  if (++spreadSinceSample >= SAMPLE_EVERY) {
    spreadSinceSample = 0;
    const copier = installCopier(value);
    if (copier !== undefined) return copier(value, depth);
  }
  return copyNested({ ...value }, depth);
}

/** Whether `value`'s own enumerable string keys are `keys`, in order (for-in: no allocation; Object.prototype has no enumerable keys). */
function hasShape(value: Record<string, unknown>, keys: readonly string[]): boolean {
  let i = 0;
  for (const k in value) {
    if (k !== keys[i]) return false;
    i++;
  }
  return i === keys.length;
}

/** Makes `value`'s shape one of the recent ones and returns its copier; undefined for shapes that are always spread. */
function installCopier(value: Record<string, unknown>): Copier | undefined {
  const keys = Object.keys(value);
  // "__proto__" in a literal would set the prototype instead of defining a key.
  if (keys.length === 0 || keys.length > MAX_COPIER_FIELDS || keys.includes("__proto__")) return undefined;
  const shape = JSON.stringify(keys);
  let copier = copiers.get(shape);
  if (copier === undefined) {
    if (copiers.size >= MAX_COPIERS) return undefined;
    copier = compileCopier(keys);
    if (copier === undefined) return undefined;
    copiers.set(shape, copier);
  }
  recentKeys[nextRecent] = keys;
  recentCopiers[nextRecent] = copier;
  nextRecent = (nextRecent + 1) % RECENT_SHAPES;
  return copier;
}

/** Replaces the nested objects of `out` (a fresh shallow copy: a spread defines every key, so an own "__proto__" stays a key) by their copies. */
function copyNested(out: Record<string, unknown>, depth: number): Record<string, unknown> {
  // Look before writing: a for-in loop without stores keeps V8's enum-cache fast path.
  let nested = false;
  for (const k in out) {
    if (typeof out[k] === "object" && out[k] !== null) {
      nested = true;
      break;
    }
  }
  if (!nested) return out;
  for (const k in out) {
    const e = out[k];
    if (typeof e === "object" && e !== null) out[k] = copyObject(e, depth + 1);
  }
  return out;
}

/** A copier for the shape `keys`; undefined where the process forbids compiling code (core/codegen.ts). */
function compileCopier(keys: readonly string[]): Copier | undefined {
  if (!mayCompile()) return undefined;
  // Field names enter the generated code only through JSON.stringify.
  const reads = keys.map((k, f) => `v${f} = value[${JSON.stringify(k)}]`).join(", ");
  const fields = keys
    .map((k, f) => `${JSON.stringify(k)}: typeof v${f} === "object" && v${f} !== null ? copyChild(v${f}, depth) : v${f}`)
    .join(", ");
  const body = `"use strict";\nreturn function copyShape(value, depth) {\n  const ${reads};\n  return { ${fields} };\n};`;
  return compileFunction<(child: typeof copyChild) => Copier>(["copyChild"], body)?.(copyChild);
}

function copyChild(v: unknown, depth: number): unknown {
  return typeof v !== "object" || v === null ? v : copyObject(v, depth + 1);
}

function isStructuredCloneable(value: object): boolean {
  return (
    ArrayBuffer.isView(value) ||
    value instanceof ArrayBuffer ||
    value instanceof RegExp ||
    value instanceof Error ||
    value instanceof Boolean ||
    value instanceof Number ||
    value instanceof String
  );
}

function cloneWhole<T>(value: T): T {
  try {
    return structuredClone(value);
  } catch (cause) {
    throw new EddyError(
      "VALUE_NOT_COPYABLE",
      `cannot copy a deep or cyclic value: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

function notCopyable(value: object): EddyError {
  const ctor: unknown = (value as { constructor?: unknown }).constructor;
  const name = typeof ctor === "function" && ctor.name !== "" ? ctor.name : "an unknown class";
  return new EddyError(
    "VALUE_NOT_COPYABLE",
    `cannot copy an instance of ${name}: values kept in state must be plain data ` +
      `(objects, arrays, Map, Set, Date, typed arrays); convert it to plain data, ` +
      `or declare the state with copy: "none" and never mutate the value`,
  );
}
