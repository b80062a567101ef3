/**
 * The async wait queues against their definitions, over random streams of records and
 * watermarks completed in random order: ordered emits exactly the input order; unordered emits
 * every record once, each watermark after every record before it and before every record after
 * it, and a record as soon as the watermarks before it are out.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { orderedQueue, unorderedQueue, type AsyncWaitQueue, type QueueOutput, type QueuedRecord } from "./async-wait-queue.ts";

interface Rec extends QueuedRecord {
  readonly id: number;
}

type Input = { kind: "record" } | { kind: "watermark" };
/** What happens next: the next input element arrives, or the `pick`-th incomplete record completes. */
type Step = { arrive: true } | { arrive: false; pick: number };

function run(ordered: boolean, inputs: readonly Input[], steps: readonly Step[]): { out: string[]; elements: string[]; sizes: number[] } {
  const out: string[] = [];
  const output: QueueOutput<Rec> = { emitRecord: (r) => void out.push(`r${r.id}`), emitWatermark: (w) => void out.push(`w${w}`) };
  const q: AsyncWaitQueue<Rec> = ordered ? orderedQueue(output) : unorderedQueue(output);
  const incomplete: Rec[] = [];
  const elements: string[] = [];
  const sizes: number[] = [];
  let next = 0;
  const arrive = (): void => {
    const e = inputs[next]!;
    const label = `${e.kind === "record" ? "r" : "w"}${next}`;
    elements.push(label);
    if (e.kind === "record") {
      const r: Rec = { isWatermark: false, done: false, id: next };
      incomplete.push(r);
      q.addRecord(r);
    } else q.addWatermark(next);
    next++;
  };
  const completeOne = (pick: number): void => {
    const [r] = incomplete.splice(pick % incomplete.length, 1);
    q.complete(r!);
  };
  for (const s of steps) {
    if (s.arrive && next < inputs.length) arrive();
    else if (!s.arrive && incomplete.length > 0) completeOne(s.pick);
    sizes.push(q.size);
  }
  while (next < inputs.length) arrive();
  while (incomplete.length > 0) completeOne(0);
  assert.equal(q.size, 0);
  return { out, elements, sizes };
}

const inputs = fc.array(fc.oneof(fc.constant<Input>({ kind: "record" }), fc.constant<Input>({ kind: "record" }), fc.constant<Input>({ kind: "watermark" })), { maxLength: 40 });
const steps = fc.array(fc.oneof(fc.constant<Step>({ arrive: true }), fc.nat(50).map((pick): Step => ({ arrive: false, pick }))), { maxLength: 120 });

test("ordered queue: emits exactly the input order, whatever order records complete in", () => {
  fc.assert(
    fc.property(inputs, steps, (ins, st) => {
      const { out, elements } = run(true, ins, st);
      assert.deepEqual(out, elements);
    }),
    { numRuns: 500 },
  );
});

test("unordered queue: every record once, never across a watermark, and a watermark after every record before it", () => {
  fc.assert(
    fc.property(inputs, steps, (ins, st) => {
      const { out, elements } = run(false, ins, st);
      assert.deepEqual([...out].sort(), [...elements].sort(), "every element exactly once");
      const position = new Map(out.map((label, i) => [label, i]));
      // Segment index of each input element: the number of watermarks before it.
      let segment = 0;
      const segmentOf = new Map<string, number>();
      for (const label of elements) {
        if (label.startsWith("w")) segment++;
        segmentOf.set(label, label.startsWith("w") ? segment - 1 : segment);
      }
      for (const w of elements.filter((l) => l.startsWith("w"))) {
        for (const r of elements.filter((l) => l.startsWith("r"))) {
          const before = segmentOf.get(r)! <= segmentOf.get(w)!;
          assert.equal(position.get(r)! < position.get(w)!, before, `${r} vs ${w} in ${out.join(" ")}`);
        }
      }
      // Watermarks keep their order.
      const ws = out.filter((l) => l.startsWith("w")).map((l) => Number(l.slice(1)));
      assert.deepEqual(ws, [...ws].sort((a, b) => a - b));
    }),
    { numRuns: 500 },
  );
});

test("unordered queue: a record of the oldest segment leaves as soon as it completes", () => {
  const out: string[] = [];
  const q = unorderedQueue<Rec>({ emitRecord: (r) => void out.push(`r${r.id}`), emitWatermark: (w) => void out.push(`w${w}`) });
  const r = (id: number): Rec => ({ isWatermark: false, done: false, id });
  const [a, b, c] = [r(1), r(2), r(3)];
  q.addRecord(a);
  q.addRecord(b);
  q.addWatermark(9);
  q.addRecord(c);
  q.complete(c);
  q.complete(b);
  assert.deepEqual(out, ["r2"]);
  assert.equal(q.size, 3);
  q.complete(a);
  assert.deepEqual(out, ["r2", "r1", "w9", "r3"]);
});
