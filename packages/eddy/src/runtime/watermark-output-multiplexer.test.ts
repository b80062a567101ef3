import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { MIN_WATERMARK } from "../core/time.ts";
import type { WatermarkOutput } from "../core/watermark-strategy.ts";
import { WatermarkOutputMultiplexer } from "./watermark-output-multiplexer.ts";

/** The underlying output as the Timestamps/Watermarks operator implements it: increasing watermarks only, an idle flag. */
class Recorder implements WatermarkOutput {
  watermark = MIN_WATERMARK;
  idle = false;
  readonly events: string[] = [];
  emitWatermark(watermark: number): void {
    if (watermark <= this.watermark) return;
    this.watermark = watermark;
    if (this.idle) this.markActive();
    this.events.push(`wm ${watermark}`);
  }
  markIdle(): void {
    if (this.idle) return;
    this.idle = true;
    this.events.push("idle");
  }
  markActive(): void {
    if (!this.idle) return;
    this.idle = false;
    this.events.push("active");
  }
}

test("the combined watermark is the minimum over the outputs; a new output holds it back until it emits", () => {
  const out = new Recorder();
  const mux = new WatermarkOutputMultiplexer(out);
  const a = mux.register("a");
  a.emitWatermark(100);
  assert.equal(out.watermark, 100, "one output: its watermark");
  const b = mux.register("b");
  a.emitWatermark(200);
  assert.equal(out.watermark, 100, "b starts at the minimum watermark and holds the output");
  b.emitWatermark(50);
  assert.equal(out.watermark, 100, "the output never regresses");
  b.emitWatermark(150);
  assert.equal(out.watermark, 150);
  b.emitWatermark(120);
  assert.equal(b.watermark, 150, "a smaller watermark does not move an output back");
  assert.deepEqual(out.events, ["wm 100", "wm 150"]);
});

test("releasing the output that holds the minimum advances the combined watermark; with none left nothing is emitted", () => {
  const out = new Recorder();
  const mux = new WatermarkOutputMultiplexer(out);
  const a = mux.register("a");
  const b = mux.register("b");
  a.emitWatermark(500);
  b.emitWatermark(10);
  assert.equal(out.watermark, 10);
  assert.equal(mux.unregister("b"), true);
  assert.equal(out.watermark, 500);
  assert.equal(mux.unregister("b"), false, "an unknown id");
  assert.equal(mux.unregister("a"), true);
  assert.equal(mux.size, 0);
  assert.deepEqual(out.events, ["wm 10", "wm 500"], "no output left: nothing emitted, no idleness");
  assert.throws(() => {
    mux.register("c");
    mux.register("c");
  }, { code: "INTERNAL" });
});

test("idle outputs leave the minimum; all idle marks the output idle; a watermark or markActive wakes it", () => {
  const out = new Recorder();
  const mux = new WatermarkOutputMultiplexer(out);
  const a = mux.register("a");
  const b = mux.register("b");
  a.emitWatermark(300);
  b.emitWatermark(100);
  b.markIdle();
  assert.equal(out.watermark, 300, "b idle: a alone");
  a.markIdle();
  assert.equal(out.idle, true);
  b.emitWatermark(100);
  assert.equal(out.idle, false, "a watermark, even one that does not advance, makes an idle output active");
  assert.equal(b.idle, false);
  b.markIdle();
  assert.equal(out.idle, true);
  a.markActive();
  assert.equal(out.idle, false);
  assert.deepEqual(out.events, ["wm 100", "wm 300", "idle", "active", "idle", "active"]);
  assert.throws(() => a.emitWatermark(Number.NaN), { code: "INVALID_WATERMARK" });
});

test("deferUpdates combines once at its end", () => {
  const out = new Recorder();
  const mux = new WatermarkOutputMultiplexer(out);
  const outputs = ["a", "b", "c"].map((id) => mux.register(id));
  mux.deferUpdates(() => {
    outputs.forEach((o, i) => o.emitWatermark(10 * (i + 1)));
    assert.deepEqual(out.events, [], "nothing before the end");
    outputs[0]!.emitWatermark(40);
  });
  assert.deepEqual(out.events, ["wm 20"]);
});

type Op =
  | { readonly op: "register" | "unregister" | "idle" | "active"; readonly id: number }
  | { readonly op: "emit"; readonly id: number; readonly watermark: number };

test("property: after every step the output is max(before, min over active outputs), idle exactly when every output is", () => {
  const op = fc.oneof(
    fc.record({ op: fc.constantFrom("register", "unregister", "idle", "active"), id: fc.integer({ min: 0, max: 4 }) }),
    fc.record({ op: fc.constant("emit"), id: fc.integer({ min: 0, max: 4 }), watermark: fc.integer({ min: 0, max: 1000 }) }),
  ) as fc.Arbitrary<Op>;
  fc.assert(
    fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
      const out = new Recorder();
      const mux = new WatermarkOutputMultiplexer(out);
      const live = new Map<number, ReturnType<WatermarkOutputMultiplexer["register"]>>();
      /** The model: each live output's watermark and idleness. */
      const model = new Map<number, { watermark: number; idle: boolean }>();
      for (const o of ops) {
        const before = { watermark: out.watermark, idle: out.idle };
        const output = live.get(o.id);
        if (o.op === "register") {
          if (output !== undefined) continue;
          live.set(o.id, mux.register(String(o.id)));
          model.set(o.id, { watermark: MIN_WATERMARK, idle: false });
        } else if (output === undefined) {
          continue;
        } else if (o.op === "unregister") {
          mux.unregister(String(o.id));
          live.delete(o.id);
          model.delete(o.id);
        } else if (o.op === "idle") {
          output.markIdle();
          model.get(o.id)!.idle = true;
        } else if (o.op === "active") {
          output.markActive();
          model.get(o.id)!.idle = false;
        } else if (o.op === "emit") {
          output.emitWatermark(o.watermark);
          const m = model.get(o.id)!;
          m.watermark = Math.max(m.watermark, o.watermark);
          m.idle = false;
        }
        const active = [...model.values()].filter((m) => !m.idle);
        if (model.size === 0) {
          assert.deepEqual({ watermark: out.watermark, idle: out.idle }, before, "no outputs: nothing changes");
        } else if (active.length === 0) {
          assert.equal(out.idle, true);
          assert.equal(out.watermark, before.watermark);
        } else {
          assert.equal(out.idle, false);
          assert.equal(out.watermark, Math.max(before.watermark, Math.min(...active.map((m) => m.watermark))));
        }
      }
    }),
    { numRuns: 300 },
  );
});
