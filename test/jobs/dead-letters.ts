/**
 * Jobs of the error-policy tests (test/error-policy.test.ts), in a module so worker threads can
 * rebuild them. `deadLetterJob`: a source of text lines, some unreadable → a map that throws on
 * some numbers → a keyed process function whose key selector rejects some → committed output;
 * the three operators dead-letter, and their dead letters go to one committing sink. Settings
 * come from the environment (read when the job is built): EDDY_DL_POLICY ("dead-letter" by
 * default, or "skip"), EDDY_DL_MAX (maxPerMinute), EDDY_DL_FAULT (an injected failure, as in
 * test/jobs/checkpointed.ts: `{ marker, afterCommit }`, fired once per marker file, after the
 * dead letters' first commit, i.e. a completed checkpoint), EDDY_DL_THROTTLE (sleep 1 ms every n records).
 */
import { existsSync } from "node:fs";
import {
  defineJob,
  staticSplitEnumerator,
  WatermarkStrategy,
  type DeadLetter,
  type ErrorPolicy,
  type KeyedProcessFunction,
  type Source,
} from "eddy";
import { committingCollectSink } from "eddy/testing";
import { fireOnce, markingFirstCommit } from "./fault-markers.ts";

/** The number of input lines: EDDY_DL_LINES, read when the job is built. */
export const lineCount = (): number => Number(process.env.EDDY_DL_LINES || 40_000);
/** Line n (1-based) of the input is unreadable when n % BAD_LINE === 0. */
export const BAD_LINE = 97;
/** The map throws on numbers divisible by THROWS_ON. */
export const THROWS_ON = 101;
/** The key selector returns an invalid key (undefined) for numbers divisible by NO_KEY. */
export const NO_KEY = 89;
const SPLITS = 4;

interface LineSplit {
  readonly id: number;
  /** The next line to read, 1-based. */
  readonly next: number;
  /** One past the last line. */
  readonly end: number;
}

/**
 * Lines 1..lines in SPLITS contiguous splits; line n reads `n`, or `#n?` when it is unreadable
 * (reported as a bad record with its split and line). Positions are checkpointed per split.
 */
function lineSource(lines: number): Source<number, LineSplit> {
  const per = Math.ceil(lines / SPLITS);
  const splits: LineSplit[] = [];
  for (let id = 0; id < SPLITS; id++) splits.push({ id, next: id * per + 1, end: Math.min(lines, (id + 1) * per) + 1 });
  return {
    boundedness: "bounded",
    createEnumerator: (context) => staticSplitEnumerator(context, splits),
    createReader: () => {
      const pending: { id: number; next: number; end: number }[] = [];
      let noMore = false;
      return {
        pollNext(output) {
          const split = pending[0];
          if (split === undefined) return noMore ? "end" : "nothing";
          for (let i = 0; i < 100 && split.next < split.end; i++) {
            const n = split.next++;
            const text = n % BAD_LINE === 0 ? `#${n}?` : String(n);
            const value = Number(text);
            if (Number.isInteger(value)) output.collect(value);
            else output.reportBadRecord({ raw: text, error: new SyntaxError(`'${text}' is not a number`), position: { split: split.id, line: n } });
          }
          if (split.next >= split.end) pending.shift();
          return "more";
        },
        isAvailable: () => Promise.resolve(),
        addSplits: (added) => void pending.push(...added.map((s) => ({ ...s }))),
        notifyNoMoreSplits: () => void (noMore = true),
        snapshotState: () => pending.map((s) => ({ ...s })),
      };
    },
  };
}

interface Fault {
  /** A file that does not exist yet: created when the fault fires. */
  readonly marker: string;
  /** The fault fires at the first record (of every 50th) after this file exists: the dead-letter sink creates it at its first commit. */
  readonly afterCommit: string;
}

function fault(): Fault | undefined {
  const raw = process.env.EDDY_DL_FAULT;
  return raw === undefined || raw === "" ? undefined : (JSON.parse(raw) as Fault);
}



/** For short sleeps (Atomics.wait on a value that never changes), so checkpoints complete while the job runs. */
const sleeper = new Int32Array(new SharedArrayBuffer(4));

const tagged: KeyedProcessFunction<number, number, string> = {
  processElement(n, ctx, out) {
    out.collect(`${ctx.getCurrentKey()}:${n}`);
  },
};

export const deadLetterJob = defineJob("dead-letters", (env) => {
  const policy = (process.env.EDDY_DL_POLICY ?? "dead-letter") as ErrorPolicy;
  const max = process.env.EDDY_DL_MAX;
  const options = max === undefined || max === "" ? {} : { maxPerMinute: Number(max) };
  const throttle = Number(process.env.EDDY_DL_THROTTLE ?? 0);
  const f = fault();
  let faultFired = false;
  const lines = env.fromSource(lineSource(lineCount()), WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n), "lines").onError(policy, options);
  const parsed = lines
    .map((n: number) => {
      if (n % THROWS_ON === 0) throw new Error(`${n} is divisible by ${THROWS_ON}`);
      return n;
    })
    .name("parse")
    .onError(policy, options);
  const keyed = parsed
    .map((n: number) => {
      // The injected failure, in an operator whose policy is fail.
      if (f !== undefined && n % 50 === 0 && existsSync(f.afterCommit) && fireOnce(f.marker)) throw new Error(`injected fault at record ${n}`);
      if (throttle > 0 && n % throttle === 0) Atomics.wait(sleeper, 0, 0, 1);
      // Until the fault has fired, the job goes slower still: on a loaded machine it could
      // otherwise end before a checkpoint with dead letters committed, and the fault never fire.
      if (f !== undefined && !faultFired && n % 10 === 0) {
        if (existsSync(f.marker)) faultFired = true;
        else Atomics.wait(sleeper, 0, 0, 1);
      }
      return n;
    })
    .name("fault")
    .keyBy((n: number) => (n % NO_KEY === 0 ? (undefined as unknown as number) : n % 10))
    .process(tagged)
    .name("tag")
    .onError(policy, options);
  keyed.sinkTo(committingCollectSink<string>("out"), "committed");
  if (policy === "dead-letter") {
    lines
      .deadLetters()
      .union(parsed.deadLetters(), keyed.deadLetters())
      .sinkTo(markingFirstCommit(committingCollectSink<DeadLetter>("dead"), f?.afterCommit), "dead letters");
  }
});

export default deadLetterJob;

/** The numbers that reach the output: readable, not thrown on, with a key. */
export function expectedOutput(lines: number): string[] {
  const out: string[] = [];
  for (let n = 1; n <= lines; n++) if (n % BAD_LINE !== 0 && n % THROWS_ON !== 0 && n % NO_KEY !== 0) out.push(`${n % 10}:${n}`);
  return out.sort();
}

/** Dead letters in a canonical order, for record-for-record comparison. */
export const deadLetterRows = (letters: readonly DeadLetter[]): string[] => letters.map((d) => JSON.stringify(d)).sort();
