/**
 * `print()`: one JSON line per record on the job's standard output (logs go to stderr), so output
 * can be piped. Values JSON cannot express are rendered as: bigint → decimal string, Map →
 * object, Set → array, undefined → null.
 */
import type { Sink } from "./sink.ts";

export function toJsonLine(value: unknown): string {
  return JSON.stringify(value === undefined ? null : value, jsonReplacer) ?? "null";
}

function jsonReplacer(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Map) return Object.fromEntries(value);
  if (value instanceof Set) return [...value];
  return value;
}

export function printSink<T>(): Sink<T> {
  return {
    createWriter: (context) => ({
      write(value) {
        context.job.writeStdout(toJsonLine(value));
      },
    }),
  };
}
