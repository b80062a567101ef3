import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { ManualClock } from "../core/clock.ts";
import { EddyError } from "../core/errors.ts";
import type { Key } from "../core/key.ts";
import { InternalTimerService } from "./timer-service.ts";
import type { OnTimerCallback, TimerDomain, TimerNamespace } from "./timer-service.ts";

interface Fired {
  domain: TimerDomain;
  timestamp: number;
  key: Key;
  keyGroup: number;
  namespace: TimerNamespace;
}

function harness(onFire?: (f: Fired, service: InternalTimerService) => void, range = { start: 0, end: 15 }) {
  const clock = new ManualClock(1_000);
  const fired: Fired[] = [];
  const mail: (() => void)[] = [];
  let inClockCallback = false;
  const onTimer: OnTimerCallback = (domain, timestamp, key, keyGroup, namespace) => {
    assert.equal(inClockCallback, false, "timers never fire inside the clock callback");
    const f = { domain, timestamp, key, keyGroup, namespace };
    fired.push(f);
    onFire?.(f, service);
  };
  const service: InternalTimerService = new InternalTimerService({
    clock,
    keyGroupRange: range,
    onTimer,
    postMail: (action) => {
      inClockCallback = true;
      mail.push(action);
      inClockCallback = false;
    },
  });
  const runMail = (): number => {
    let n = 0;
    for (let action = mail.shift(); action !== undefined; action = mail.shift()) {
      action();
      n++;
    }
    return n;
  };
  return { clock, fired, mail, runMail, service };
}

const stamps = (fired: Fired[]): number[] => fired.map((f) => f.timestamp);

test("event-time timers fire in timestamp order, then registration order, up to the watermark", () => {
  const { service, fired } = harness();
  service.registerEventTimeTimer("b", 1, "", 30);
  service.registerEventTimeTimer("a", 2, "", 10);
  service.registerEventTimeTimer("c", 3, "w", 20);
  service.registerEventTimeTimer("a", 2, "w", 20);
  service.registerEventTimeTimer("d", 4, "", 40);
  assert.equal(service.currentWatermark, Number.NEGATIVE_INFINITY);
  service.advanceWatermark(30);
  assert.deepEqual(
    fired.map((f) => [f.timestamp, f.key, f.namespace]),
    [
      [10, "a", ""],
      [20, "c", "w"],
      [20, "a", "w"],
      [30, "b", ""],
    ],
  );
  assert.equal(service.currentWatermark, 30);
  assert.equal(service.numEventTimeTimers(), 1);
  service.advanceWatermark(Number.POSITIVE_INFINITY);
  assert.deepEqual(stamps(fired), [10, 20, 20, 30, 40]);
  assert.equal(fired[4]!.keyGroup, 4);
});

test("timers are deduplicated per (key, namespace, timestamp) and domain", () => {
  const { service, fired, clock, runMail } = harness();
  service.registerEventTimeTimer(["k", 1], 1, 7, 10);
  service.registerEventTimeTimer(["k", 1], 1, 7, 10);
  service.registerEventTimeTimer(["k", 1], 1, "7", 10);
  service.registerEventTimeTimer("k", 1, 7, 10);
  service.registerProcessingTimeTimer(["k", 1], 1, 7, 10);
  assert.equal(service.numEventTimeTimers(), 3);
  assert.equal(service.numProcessingTimeTimers(), 1);
  service.advanceWatermark(10);
  assert.equal(fired.length, 3);
  clock.advance(0);
  runMail();
  assert.equal(fired.length, 4);
  assert.equal(fired[3]!.domain, "processing");
});

test("deleting a timer prevents it from firing; deleting an absent one is a no-op", () => {
  const { service, fired } = harness();
  service.registerEventTimeTimer("k", 1, "", 10);
  service.registerEventTimeTimer("k", 1, "", 20);
  service.deleteEventTimeTimer("k", 1, "", 10);
  service.deleteEventTimeTimer("k", 1, "", 10);
  service.deleteEventTimeTimer("other", 2, "", 20);
  service.deleteProcessingTimeTimer("k", 1, "", 20);
  assert.equal(service.numEventTimeTimers(), 1);
  service.advanceWatermark(100);
  assert.deepEqual(stamps(fired), [20]);
});

test("a timer registered while firing fires in the same advance when it is due", () => {
  let first = true;
  const { service, fired } = harness((f, s) => {
    if (f.timestamp === 10 && first) {
      first = false;
      s.registerEventTimeTimer("k", 1, "", 15); // due: fires in this call
      s.registerEventTimeTimer("k", 1, "", 10); // the firing timer is gone: a new one, due
      s.registerEventTimeTimer("k", 1, "", 50); // not due
      s.deleteEventTimeTimer("k", 1, "", 20); // deleting a pending one during firing
    }
  });
  service.registerEventTimeTimer("k", 1, "", 10);
  service.registerEventTimeTimer("k", 1, "", 20);
  service.advanceWatermark(30);
  assert.deepEqual(stamps(fired), [10, 10, 15]);
  assert.equal(service.numEventTimeTimers(), 1);
});

test("a timer for a time at or before the current watermark fires on the next advance, even to the same value", () => {
  const { service, fired } = harness();
  service.advanceWatermark(100);
  service.registerEventTimeTimer("k", 1, "", 50);
  service.registerEventTimeTimer("k", 1, "", 100);
  assert.equal(fired.length, 0);
  service.advanceWatermark(100);
  assert.deepEqual(stamps(fired), [50, 100]);
});

test("a watermark that goes back is an internal error", () => {
  const { service } = harness();
  service.advanceWatermark(10);
  assert.throws(
    () => service.advanceWatermark(9),
    (e: unknown) => e instanceof EddyError && e.code === "WATERMARK_REGRESSED" && e.domain === "internal",
  );
  assert.throws(() => service.advanceWatermark(Number.NaN), /WATERMARK|went back/);
});

test("key groups outside the range are rejected", () => {
  const { service } = harness(undefined, { start: 8, end: 15 });
  assert.throws(
    () => service.registerEventTimeTimer("k", 7, "", 1),
    (e: unknown) => e instanceof EddyError && e.code === "KEY_GROUP_OUT_OF_RANGE",
  );
  assert.throws(() => [...service.timersForKeyGroup(16)], /outside/);
});

test("timersForKeyGroup lists the timers of exactly that key group, both domains", () => {
  const { service } = harness(undefined, { start: 8, end: 15 });
  service.registerEventTimeTimer("a", 8, "", 1);
  service.registerEventTimeTimer("a", 8, "w", 2);
  service.registerEventTimeTimer("b", 9, "", 3);
  service.registerProcessingTimeTimer("c", 8, 5, 2_000);
  service.registerProcessingTimeTimer("d", 10, "", 2_000);
  assert.deepEqual(
    [...service.timersForKeyGroup(8)],
    [
      { domain: "event", timestamp: 1, key: "a", namespace: "" },
      { domain: "event", timestamp: 2, key: "a", namespace: "w" },
      { domain: "processing", timestamp: 2_000, key: "c", namespace: 5 },
    ],
  );
  assert.deepEqual([...service.timersForKeyGroup(9)].map((t) => t.key), ["b"]);
  assert.deepEqual([...service.timersForKeyGroup(11)], []);
  service.advanceWatermark(10);
  assert.deepEqual([...service.timersForKeyGroup(8)].map((t) => t.domain), ["processing"]);
});

test("processing-time timers fire through the mailbox when the clock reaches them", () => {
  const { service, fired, clock, mail, runMail } = harness();
  service.registerProcessingTimeTimer("a", 1, "", 1_100);
  service.registerProcessingTimeTimer("b", 2, "", 1_050);
  service.registerProcessingTimeTimer("c", 3, "", 1_100);
  assert.equal(clock.pendingCount, 1, "one clock callback, for the earliest timer");
  clock.advance(49);
  assert.equal(mail.length, 0);
  clock.advance(1);
  assert.equal(mail.length, 1);
  assert.equal(fired.length, 0, "nothing fires until the mail runs");
  clock.advance(50); // the mail runs late: by then every timer is due
  runMail();
  assert.deepEqual(fired.map((f) => f.key), ["b", "a", "c"]);
  assert.equal(clock.pendingCount, 0);
  assert.equal(service.numProcessingTimeTimers(), 0);
});

test("the clock callback is re-armed for an earlier timer, after deletion and after firing", () => {
  const { service, fired, clock, mail, runMail } = harness();
  service.registerProcessingTimeTimer("k", 1, "", 1_200);
  service.registerProcessingTimeTimer("k", 1, "", 1_100); // earlier: re-armed
  assert.equal(clock.pendingCount, 1);
  service.deleteProcessingTimeTimer("k", 1, "", 1_100); // earliest deleted: re-armed for 1_200
  assert.equal(clock.pendingCount, 1);
  clock.advanceTo(1_150);
  assert.equal(mail.length, 0, "no callback at the deleted timer's time");
  service.registerProcessingTimeTimer("k", 1, "", 1_300);
  clock.advanceTo(1_200);
  runMail();
  assert.deepEqual(stamps(fired), [1_200]);
  assert.equal(clock.pendingCount, 1, "re-armed for the next timer after firing");
  service.deleteProcessingTimeTimer("k", 1, "", 1_300);
  assert.equal(clock.pendingCount, 0, "no timers, no callback");
});

test("a processing-time timer for a passed time fires on the next clock advance", () => {
  const { service, fired, clock, runMail } = harness((f, s) => {
    if (f.key === "self") s.registerProcessingTimeTimer("later", 1, "", 1_000); // passed, while firing
  });
  service.registerProcessingTimeTimer("self", 1, "", 900);
  assert.equal(runMail(), 0);
  clock.advance(0);
  runMail();
  assert.deepEqual(fired.map((f) => f.key), ["self", "later"]);
});

test("close cancels the clock callback and turns pending mail into a no-op", () => {
  const { service, fired, clock, mail, runMail } = harness();
  service.registerProcessingTimeTimer("k", 1, "", 1_010);
  service.registerProcessingTimeTimer("k", 1, "", 1_020);
  clock.advance(10);
  assert.equal(mail.length, 1);
  service.close();
  service.close();
  runMail();
  clock.advance(100);
  assert.equal(fired.length, 0);
  assert.equal(clock.pendingCount, 0);
});

type TimerOp =
  | { t: "reg" | "del"; domain: TimerDomain; k: number; ns: number; ts: number }
  | { t: "wm"; by: number }
  | { t: "clock"; by: number };

const timerOp: fc.Arbitrary<TimerOp> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constantFrom("reg" as const, "reg" as const, "del" as const),
      domain: fc.constantFrom<TimerDomain>("event", "processing"),
      k: fc.nat({ max: 4 }),
      ns: fc.nat({ max: 1 }),
      ts: fc.integer({ min: 990, max: 1_060 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("wm" as const), by: fc.nat({ max: 15 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("clock" as const), by: fc.nat({ max: 15 }) }) },
);

test("random register/delete/advance sequences agree with a sorted-array reference", () => {
  const keys: Key[] = ["a", "b", 1, ["a", 2], 3n];
  const nss: TimerNamespace[] = ["", 4];
  fc.assert(
    fc.property(fc.array(timerOp, { maxLength: 80, size: "max" }), (ops) => {
      const { service, fired, clock, runMail } = harness();
      type Ref = { domain: TimerDomain; k: number; ns: number; ts: number; seq: number };
      let ref: Ref[] = [];
      const expected: string[] = [];
      let seq = 0;
      let wm = 980;
      service.advanceWatermark(wm);
      const same = (a: Ref, o: { domain: TimerDomain; k: number; ns: number; ts: number }): boolean =>
        a.domain === o.domain && a.k === o.k && a.ns === o.ns && a.ts === o.ts;
      const fireDue = (domain: TimerDomain, upTo: number): void => {
        const due = ref.filter((r) => r.domain === domain && r.ts <= upTo).sort((x, y) => x.ts - y.ts || x.seq - y.seq);
        for (const r of due) expected.push(`${domain}:${r.k}:${r.ns}:${r.ts}`);
        ref = ref.filter((r) => !due.includes(r));
      };
      for (const op of ops) {
        if (op.t === "reg" || op.t === "del") {
          const key = keys[op.k]!;
          const kg = op.k;
          const ns = nss[op.ns]!;
          if (op.t === "reg") {
            if (op.domain === "event") service.registerEventTimeTimer(key, kg, ns, op.ts);
            else service.registerProcessingTimeTimer(key, kg, ns, op.ts);
            if (!ref.some((r) => same(r, op))) ref.push({ ...op, seq: seq++ });
          } else {
            if (op.domain === "event") service.deleteEventTimeTimer(key, kg, ns, op.ts);
            else service.deleteProcessingTimeTimer(key, kg, ns, op.ts);
            ref = ref.filter((r) => !same(r, op));
          }
        } else if (op.t === "wm") {
          wm += op.by;
          service.advanceWatermark(wm);
          fireDue("event", wm);
        } else if (op.t === "clock") {
          clock.advance(op.by);
          runMail();
          fireDue("processing", clock.now());
        }
        assert.deepEqual(
          fired.map((f) => `${f.domain}:${keys.indexOf(f.key)}:${nss.indexOf(f.namespace)}:${f.timestamp}`),
          expected,
        );
        assert.equal(service.numEventTimeTimers(), ref.filter((r) => r.domain === "event").length);
        assert.equal(service.numProcessingTimeTimers(), ref.filter((r) => r.domain === "processing").length);
        const due = ref.some((r) => r.domain === "processing");
        assert.equal(clock.pendingCount, due ? 1 : 0, "exactly one callback armed while timers exist");
      }
      const listed = new Set<string>();
      for (let kg = 0; kg <= 4; kg++) {
        for (const t of service.timersForKeyGroup(kg)) {
          assert.equal(keys.indexOf(t.key), kg);
          listed.add(`${t.domain}:${kg}:${nss.indexOf(t.namespace)}:${t.timestamp}`);
        }
      }
      assert.deepEqual(listed, new Set(ref.map((r) => `${r.domain}:${r.k}:${r.ns}:${r.ts}`)));
    }),
    { numRuns: 300 },
  );
});

test("measures register, duplicate register and fire of event-time timers", (t) => {
  const keys = Array.from({ length: 1024 }, (_, i) => `k${i}`);
  const run = (): string => {
    const { service } = harness(undefined, { start: 0, end: 127 });
    const n = 100_000;
    // Window-like: each of 1024 keys registers the end of its current 1 s window per record.
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) service.registerEventTimeTimer(keys[i & 1023]!, i & 127, "", ((i >> 14) + 1) * 1000);
    const t1 = process.hrtime.bigint();
    const distinct = service.numEventTimeTimers();
    service.advanceWatermark(Number.POSITIVE_INFINITY);
    const t2 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) service.registerEventTimeTimer(keys[i & 1023]!, i & 127, "", i);
    const t3 = process.hrtime.bigint();
    assert.equal(service.numEventTimeTimers(), n);
    return (
      `register (mostly duplicates): ${(Number(t1 - t0) / n).toFixed(0)} ns/call; ` +
      `fire: ${(Number(t2 - t1) / distinct).toFixed(0)} ns/timer; ` +
      `register (all distinct, heap of ${n}): ${(Number(t3 - t2) / n).toFixed(0)} ns/call`
    );
  };
  run(); // warm up
  t.diagnostic(run());
});
