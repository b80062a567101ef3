/**
 * Type tests of the DataStream operators: the output type is inferred from the function, and the
 * common mistakes fail to compile. Every `@ts-expect-error` must fail without its directive.
 */
import {
  AsyncDataStream,
  defineJob,
  OutputTag,
  type Collector,
  type DataStream,
  type KeyedProcessFunction,
  type ProcessFunction,
  type Sink,
  type StreamExecutionEnvironment,
} from "eddy";
import { collectSink } from "eddy/testing";
import { expectRecords, expectType } from "./expect-type.ts";

interface Word {
  word: string;
  count: number;
}

export default defineJob("type-tests: operators", (env: StreamExecutionEnvironment) => {
  const lines = env.fromElements("to be or", "not to be");
  expectRecords<string>()(lines);

  // map and filter infer from the function.
  const lengths = lines.map((l) => l.length);
  expectRecords<number>()(lengths);
  expectRecords<string>()(lines.filter((l) => l.length > 2));
  // @ts-expect-error a map's output is not any
  lengths.map((n) => n.toUpperCase());
  // @ts-expect-error filter needs a boolean predicate
  lines.filter((l) => l.length);

  // flatMap: from an annotated collector, or an explicit type argument.
  const words = lines.flatMap((line, out: Collector<Word>) => {
    for (const w of line.split(" ")) out.collect({ word: w, count: 1 });
  });
  expectRecords<Word>()(words);
  expectRecords<string>()(lines.flatMap<string>((line, out) => line.split(" ").forEach((w) => out.collect(w))));
  // @ts-expect-error (the README's word count without a type) the output is never, so collecting fails
  lines.flatMap((line, out) => out.collect({ word: line, count: 1 }));
  // @ts-expect-error records have only the fields collected
  words.map((r) => r.doesNotExist);
  // @ts-expect-error collecting the wrong type into a typed collector
  lines.flatMap((line, out: Collector<Word>) => out.collect(line));
  // @ts-expect-error the explicit type argument is checked against what is collected
  lines.flatMap<number>((line, out) => out.collect(line));

  // keyBy, rolling aggregations.
  const keyed = words.keyBy((w) => w.word);
  expectRecords<Word>()(keyed.sum("count"));
  // @ts-expect-error sum takes a number-valued field
  keyed.sum("word");
  // @ts-expect-error a rolling reduce returns the record type
  keyed.reduce((a, b) => a.count + b.count);
  // @ts-expect-error a key must be a Key (string, number, bigint, boolean …), not an object
  words.keyBy((w) => ({ w }));

  // process: object literals with an annotated collector, classes, explicit type arguments.
  expectRecords<number>()(lines.process({ processElement: (l, _ctx, out: Collector<number>) => out.collect(l.length) }));
  expectRecords<number>()(lines.process<number>({ processElement: (l, _ctx, out) => out.collect(l.length) }));
  class Lengths implements ProcessFunction<string, number> {
    processElement(l: string, _ctx: unknown, out: Collector<number>): void {
      out.collect(l.length);
    }
  }
  expectRecords<number>()(lines.process(new Lengths()));
  expectRecords<number>()(lines.process(() => new Lengths()));
  // @ts-expect-error without a type, collecting fails (the output is never, not unknown)
  lines.process({ processElement: (l, _ctx, out) => out.collect(l) });
  // @ts-expect-error the function's input must be the stream's record type
  lengths.process(new Lengths());

  // keyed process: the key type reaches the context.
  const counted = keyed.process({
    processElement(w, ctx, out: Collector<[string, number]>) {
      expectType<string>()(ctx.getCurrentKey());
      out.collect([ctx.getCurrentKey(), w.count]);
    },
  });
  expectRecords<[string, number]>()(counted);
  const keyedFn: KeyedProcessFunction<string, Word, string> = { processElement: (w, _ctx, out) => out.collect(w.word) };
  expectRecords<string>()(keyed.process(keyedFn));
  keyed.process<string>({
    processElement(_w, ctx, out) {
      // @ts-expect-error the key is a string
      const n: number = ctx.getCurrentKey();
      out.collect(String(n));
    },
  });

  // Side outputs are typed by their tag.
  const tooLong = new OutputTag<string>("too-long");
  const short = lines.process<string>({
    processElement(l, ctx, out) {
      if (l.length > 5) ctx.output(tooLong, l);
      else out.collect(l);
      // @ts-expect-error a side output takes its tag's type
      ctx.output(tooLong, l.length);
    },
  });
  expectRecords<string>()(short.getSideOutput(tooLong));

  // connect / CoProcessFunction.
  const both = lines.connect(lengths).process({
    processElement1: (l, _ctx, out: Collector<string | number>) => out.collect(l),
    processElement2: (n, _ctx, out) => out.collect(n),
  });
  expectRecords<string | number>()(both);
  lines.connect(lengths).process<string>({
    processElement1: (l, _ctx, out) => out.collect(l),
    // @ts-expect-error the second input is a number, and the output a string
    processElement2: (n, _ctx, out) => out.collect(n),
  });
  const keyedBoth = words.connect(lengths).keyBy((w) => w.word, (n) => String(n));
  expectRecords<string>()(
    keyedBoth.process({
      processElement1: (w, ctx, out: Collector<string>) => out.collect(`${ctx.getCurrentKey()}:${w.count}`),
      processElement2: (_n, ctx, out) => out.collect(ctx.getCurrentKey()),
    }),
  );
  // @ts-expect-error both key selectors give the same key type
  words.connect(lengths).keyBy((w) => w.word, (n) => n);

  // Async I/O infers its output from the promised results.
  const enriched = AsyncDataStream.orderedWait(words, async (w) => [{ ...w, upper: w.word.toUpperCase() }], { timeoutMs: 1000 });
  expectRecords<{ upper: string; word: string; count: number }>()(enriched);
  // @ts-expect-error the async function promises an iterable of results, not a single record
  AsyncDataStream.unorderedWait(words, async (w) => w.count, { timeoutMs: 1000 });

  // Sinks take the stream's type.
  words.sinkTo(collectSink<Word>("words"));
  const numberSink: Sink<number> = collectSink<number>("numbers");
  // @ts-expect-error a sink of numbers does not take words
  words.sinkTo(numberSink);
  // @ts-expect-error union merges streams of one type
  words.union(lengths);

  const unused: DataStream<never> = lines.process({ processElement: () => {} });
  void unused;
});
