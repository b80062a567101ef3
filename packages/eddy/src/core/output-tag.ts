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
