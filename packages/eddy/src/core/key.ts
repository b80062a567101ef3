/**
 * Keys: what `keyBy` selectors may return. Keys are compared by value, never by object identity:
 * strings, finite numbers, bigints, and non-empty arrays of those (composite keys). Everything
 * keyed is addressed in maps by `mapKeyOf(key)`; a number and a string that look alike are
 * different keys (1 !== "1").
 */

import { EddyError } from "./errors.ts";

export type Key = string | number | bigint | readonly Key[];

/** The identity of a key inside JS maps: the key itself for scalars, a canonical string for arrays. */
export type MapKey = string | number | bigint;

/**
 * Returns why `key` is not a valid key, or undefined when it is. Checked once per record by
 * keyed partitioners and keyed operators; the caller wraps the message with the operator name.
 */
export function invalidKeyReason(key: unknown): string | undefined {
  switch (typeof key) {
    case "string":
    case "bigint":
      return undefined;
    case "number":
      return Number.isFinite(key) ? undefined : `key is ${key}; numeric keys must be finite`;
    case "undefined":
      return "key is undefined";
    case "object":
      if (key === null) return "key is null";
      if (Array.isArray(key)) {
        if (key.length === 0) return "key is an empty array";
        for (let i = 0; i < key.length; i++) {
          const inner = invalidKeyReason(key[i]);
          if (inner !== undefined) return `element ${i} of the composite key: ${inner}`;
        }
        return undefined;
      }
      return "key is an object; return a string, number, bigint or an array of those (e.g. [a, b]) from the key selector";
    default:
      return `key is a ${typeof key}; keys must be strings, numbers, bigints or arrays of those`;
  }
}

/**
 * Returns `key` as a Key, or throws an INVALID_KEY error naming the operator whose key selector
 * produced it. hot path: strings and finite numbers pass without the general check.
 */
export function requireValidKey(key: unknown, operatorName: string): Key {
  if (typeof key === "string" || (typeof key === "number" && key - key === 0)) return key;
  const reason = invalidKeyReason(key);
  if (reason === undefined) return key as Key;
  throw new EddyError("INVALID_KEY", `key selector of '${operatorName}' returned an invalid key: ${reason}`, { operator: operatorName });
}

/** A key as a message shows it: strings quoted, bigints with n, arrays element by element. */
export function describeKey(key: Key): string {
  if (typeof key === "string") return JSON.stringify(key);
  if (typeof key === "bigint") return `${key}n`;
  if (typeof key === "number") return String(key);
  return `[${key.map(describeKey).join(", ")}]`;
}

/** Map identity of a valid key. Scalars map to themselves; arrays to an unambiguous string. */
export function mapKeyOf(key: Key): MapKey {
  if (typeof key !== "object") return key;
  return compositeKeyString(key);
}

/*
 * The map identity of a composite key: "\u0000[", one tagged part per element, "]". Tags keep
 * ["a,b"] and ["a", "b"] and [1] and ["1"] apart; every part says where it ends:
 *
 *   s<length>:<chars>   string
 *   u<lo><hi>           number that is an integer in [0, 2^32): its low and high 16 bits as two
 *                       UTF-16 code units (-0 is 0)
 *   n<decimal>;         any other number
 *   b<decimal>;         bigint
 *   \u0000[ ... ]       nested array
 *
 * Only in memory (Map keys of state and timers), never persisted or hashed into key groups, so it
 * may change between versions.
 */
const TAG_U32 = 0x75; // "u"

function compositeKeyString(key: readonly Key[]): string {
  // hot path: a pair of small non-negative integers, e.g. [auction, day], in one allocation
  // (no number formatting, no concatenation).
  if (key.length === 2) {
    const a = key[0];
    const b = key[1];
    if (typeof a === "number" && typeof b === "number" && a >>> 0 === a && b >>> 0 === b) {
      return String.fromCharCode(0, 0x5b, TAG_U32, a & 0xffff, a >>> 16, TAG_U32, b & 0xffff, b >>> 16, 0x5d);
    }
  }
  let out = "\u0000[";
  for (let i = 0; i < key.length; i++) {
    const part = key[i]!;
    switch (typeof part) {
      case "string":
        out += `s${part.length}:${part}`;
        break;
      case "number":
        out += part >>> 0 === part ? String.fromCharCode(TAG_U32, part & 0xffff, part >>> 16) : `n${part};`;
        break;
      case "bigint":
        out += `b${part};`;
        break;
      default:
        out += compositeKeyString(part);
    }
  }
  return out + "]";
}
