/**
 * Word count: the "hello world" of stream processing.
 *
 *   npx eddy run examples/word-count.ts
 *
 * Lines are split into words; `keyBy` sends every occurrence of a word to the same subtask, where
 * `sum` keeps a rolling count per word in keyed state and emits the updated count each time.
 */
import { defineJob, type Collector } from "eddy";

interface WordCount {
  word: string;
  count: number;
}

export default defineJob("word-count", (env) => {
  env
    .fromElements("to be or", "not to be")
    .flatMap((line: string, out: Collector<WordCount>) => {
      for (const w of line.split(" ")) out.collect({ word: w, count: 1 });
    })
    .keyBy((r) => r.word)
    .sum("count")
    .uid("word-counts")
    .print();
});
