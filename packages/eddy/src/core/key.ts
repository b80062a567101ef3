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
  throw new EddyError("INVALID_KEY", `key selector of '${operatorName}' returned an invalid key: ${reason}`, {
    domain: "user",
    retryable: false,
    operator: operatorName,
  });
}

/** Map identity of a valid key. Scalars map to themselves; arrays to an unambiguous string. */
export function mapKeyOf(key: Key): MapKey {
  if (typeof key !== "object") return key;
  return compositeKeyString(key);
}

function compositeKeyString(key: readonly Key[]): string {
  // Tagged, length-prefixed so ["a,b"] and ["a", "b"] and [1] and ["1"] all differ.
  let out = "\u0000[";
  for (let i = 0; i < key.length; i++) {
    const part = key[i]!;
    switch (typeof part) {
      case "string":
        out += `s${part.length}:${part}`;
        break;
      case "number":
        out += `n${Object.is(part, -0) ? 0 : part};`;
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
