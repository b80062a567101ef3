/**
 * The asynchronous part of a checkpoint with an incremental keyed snapshot (serializeTaskSnapshot):
 * the shared file gets the state and the timers (sections `keyed` and `timers` per key group), the
 * chain is settled with the file written, every key group is released as it is done, and the
 * work yields to the event loop between key groups — the task file has no section for them.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ByteWriter } from "../core/codec/bytes.ts";
import type { SharedFileRef } from "../state/incremental-snapshot.ts";
import { serializeTaskSnapshot, type OperatorSnapshot } from "./checkpointing.ts";

test("an incremental keyed snapshot: shared sections per key group, chain settled after the write, groups released, the event loop served", async () => {
  const released: number[] = [];
  let settled: readonly SharedFileRef[] | undefined | "never" = "never";
  const previous: SharedFileRef = { name: "task-0-0-0-base-1-aa.kgs", size: 1, sha256: "0".repeat(64) };
  const snapshot: OperatorSnapshot = {
    operatorId: "op",
    operatorName: "Op",
    operatorStates: [],
    keyed: {
      keyGroupRange: { start: 0, end: 31 },
      states: [],
      watermark: 0,
      hasKeyGroup: () => false, // incremental: the task file has no keyed section
      writeKeyGroup: () => assert.fail("the task file has nothing to write"),
      releaseKeyGroup: (kg) => void released.push(kg),
      release: () => {
        if (settled === "never") settled = undefined;
      },
      writeSharedTimers: (kg: number, out: ByteWriter) => {
        if (kg % 4 !== 0 && kg !== 31) return false;
        out.varuint(kg);
        return true;
      },
      shared: {
        kind: "delta",
        previous: Promise.resolve([previous]),
        writeKeyGroup: (kg: number, out: ByteWriter) => {
          // Slow serialization: 2 ms per group.
          const until = performance.now() + 2;
          while (performance.now() < until);
          if (kg % 2 === 1) return false;
          out.varuint(kg);
          return true;
        },
        settle: (chain) => {
          if (settled === "never") settled = chain;
        },
      },
    },
  };
  let turns = 0;
  let ticking = true;
  const tick = (): void => {
    turns++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const ref: SharedFileRef = { name: "task-0-0-0-delta-2-bb.kgs", size: 16, sha256: "1".repeat(64) };
  const written: { operatorIndex: number; kind: string; sections: string[] }[] = [];
  let result: Awaited<ReturnType<typeof serializeTaskSnapshot>>;
  try {
    result = await serializeTaskSnapshot([snapshot], async (operatorIndex, _id, kind, shared) => {
      const sections: string[] = [];
      for await (const s of shared) sections.push(`${s.name} ${s.keyGroup}`);
      written.push({ operatorIndex, kind, sections });
      return ref;
    });
  } finally {
    ticking = false;
  }
  const { sections, operators, sharedBytes } = result;
  assert.deepEqual(sections, []);
  const expected: string[] = [];
  for (let kg = 0; kg < 32; kg++) {
    if (kg % 2 === 0) expected.push(`keyed ${kg}`);
    if (kg % 4 === 0 || kg === 31) expected.push(`timers ${kg}`);
  }
  assert.deepEqual(written, [{ operatorIndex: 0, kind: "delta", sections: expected }]);
  assert.deepEqual(settled, [previous, ref], "the chain: the previous one and the file written");
  assert.deepEqual(operators[0]!.keyed!.incremental, { chain: [previous, ref] });
  assert.equal(sharedBytes, 16);
  assert.deepEqual(released, Array.from({ length: 32 }, (_, i) => i), "every key group released as it was done");
  assert.ok(turns >= 8, `the event loop ran ${turns} times during 64 ms of serialization`);
});
