import { EddyError } from "./errors.ts";

/**
 * Names a side output. Two tags are the same side output when their ids are equal; the type
 * parameter only types what `getSideOutput(tag)` returns.
 */
export class OutputTag<T> {
  readonly id: string;
  /** Phantom field carrying the element type; never set at run time. */
  declare readonly __type?: T;

  constructor(id: string) {
    if (typeof id !== "string" || id.length === 0) throw new TypeError("OutputTag needs a non-empty string id");
    this.id = id;
  }

  toString(): string {
    return `OutputTag(${this.id})`;
  }
}

/**
 * Throws INVALID_OUTPUT_TAG, naming `call`, unless `tag` is a tag (an object with a string id):
 * a null or undefined tag would otherwise fail deep inside the engine. `domain` is "user" where a
 * running function made the call (ctx.output), "config" (the default) while a job is built.
 */
export function requireOutputTag(tag: unknown, call: string, domain: "config" | "user" = "config"): void {
  if (tag !== null && typeof tag === "object" && typeof (tag as { id?: unknown }).id === "string") return;
  const got = tag === null || tag === undefined ? String(tag) : typeof tag === "object" ? "an object without an id" : `a ${typeof tag}`;
  throw new EddyError("INVALID_OUTPUT_TAG", `${call} needs an OutputTag (new OutputTag<T>("name")), got ${got}`, { domain });
}
