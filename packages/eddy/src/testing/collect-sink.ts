/**
 * A sink that keeps every record in memory under a name, for tests: read them back with
 * `handle.collected(name)` after `await handle.done`. Records of parallel subtasks interleave in
 * arrival order.
 */
import type { Sink } from "../connector/sink.ts";

export function collectSink<T>(name: string): Sink<T> {
  if (typeof name !== "string" || name.length === 0) throw new TypeError("collectSink needs a name");
  return {
    createWriter: (context) => ({
      write(value) {
        context.job.collect(name, value);
      },
    }),
  };
}
