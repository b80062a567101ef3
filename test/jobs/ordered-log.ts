/**
 * The job of test/source-watermarks.test.ts's ordering test, in its own module so worker threads
 * can rebuild it: one ordered log (a source of one split, so of one subtask) → fromSource's
 * timestamps → keyBy → a process function that counts, per key, the events that arrive out of
 * their order, and emits the count with the key's last event.
 */
import { defineJob, staticSplitEnumerator, ValueStateDescriptor, type Source } from "eddy";
import { collectSink } from "eddy/testing";
import { punctuated } from "../fixtures.ts";

export const KEYS = 49;
const EVENTS = KEYS * 800;
const PER_KEY = EVENTS / KEYS;

interface Ev {
  readonly key: number;
  /** Counts up from 0 per key, in the log's order. */
  readonly seq: number;
  readonly ts: number;
}

function orderedLog(): Source<Ev, { next: number }> {
  return {
    boundedness: "bounded",
    maxParallelism: 1,
    createEnumerator: (context) => staticSplitEnumerator(context, [{ next: 0 }]),
    createReader() {
      const splits: { next: number }[] = [];
      let noMore = false;
      return {
        pollNext(output) {
          const split = splits[0];
          if (split === undefined) return noMore ? "end" : "nothing";
          const stop = Math.min(EVENTS, split.next + 500);
          for (; split.next < stop; split.next++) output.collect({ key: split.next % KEYS, seq: Math.floor(split.next / KEYS), ts: split.next });
          if (split.next === EVENTS) splits.shift();
          return "more";
        },
        isAvailable: () => Promise.resolve(),
        addSplits: (s) => void splits.push(...s.map((x) => ({ ...x }))),
        notifyNoMoreSplits: () => void (noMore = true),
        snapshotState: () => splits.map((s) => ({ ...s })),
      };
    },
  };
}

const last = new ValueStateDescriptor<number>("last");
const outOfOrder = new ValueStateDescriptor<number>("outOfOrder");

export default defineJob("ordered-log", (env) => {
  env
    .fromSource(orderedLog(), punctuated<Ev>(0), "log")
    .keyBy((e) => e.key)
    .process<string>({
      processElement(e, ctx, out) {
        const lastSeq = ctx.getState(last);
        const late = ctx.getState(outOfOrder);
        if (e.seq !== (lastSeq.value() ?? -1) + 1) late.update((late.value() ?? 0) + 1);
        lastSeq.update(Math.max(lastSeq.value() ?? -1, e.seq));
        if (e.seq === PER_KEY - 1) out.collect(`${e.key}:${late.value() ?? 0}`);
      },
    })
    .sinkTo(collectSink<string>("out"));
});
