/**
 * How big the shared-memory rings between workers are, and how much credit their channels get
 * (remoteChannelSizing): what bounds a channel's memory, by default and when configured.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { frameRingBytesFor } from "../runtime/channels/frame-ring.ts";
import { EddyError } from "../core/errors.ts";
import { remoteChannelSizing, type CrossWorkerChannel } from "./thread-protocol.ts";

const MiB = 1024 * 1024;

/** Every worker sending to every other once: what one keyBy between `workers` workers gives. */
function allToAll(workers: number): CrossWorkerChannel[] {
  const out: CrossWorkerChannel[] = [];
  for (let s = 0; s < workers; s++) for (let r = 0; r < workers; r++) if (s !== r) out.push({ channelId: out.length, sender: s, receiver: r });
  return out;
}

const defaults = { channelCapacityRecords: 16_384, capacityExplicit: false, channelBufferBytes: undefined };

test("by default, 8 MiB per worker is split among its inputs from other workers, 512 KiB to 4 MiB each", () => {
  assert.deepEqual(remoteChannelSizing(allToAll(2), defaults), { ringBytes: 4 * MiB, creditRecords: 262_144 });
  // Seven inputs per worker: 8 / 7 MiB, rounded down to a power of two.
  assert.deepEqual(remoteChannelSizing(allToAll(8), defaults), { ringBytes: 1 * MiB, creditRecords: 65_536 });
  // Many inputs: never below 512 KiB, and the credit never below the configured records.
  assert.deepEqual(remoteChannelSizing(allToAll(40), defaults), { ringBytes: 512 * 1024, creditRecords: 32_768 });
  // The worker with the most inputs decides.
  const skewed = [...allToAll(2), { channelId: 9, sender: 0, receiver: 1 }, { channelId: 10, sender: 0, receiver: 1 }];
  assert.equal(remoteChannelSizing(skewed, defaults).ringBytes, 2 * MiB);
  assert.equal(remoteChannelSizing([], defaults).ringBytes, 4 * MiB);
});

test("a configured record capacity sizes the rings from it, as before rings had a byte size", () => {
  for (const capacity of [4, 256, 16_384, 1_000_000]) {
    assert.deepEqual(remoteChannelSizing(allToAll(2), { channelCapacityRecords: capacity, capacityExplicit: true, channelBufferBytes: undefined }), {
      ringBytes: frameRingBytesFor(capacity),
      creditRecords: capacity,
    });
  }
});

test("configured buffer bytes are rounded down to a power of two within 64 KiB-4 MiB; nonsense is refused", () => {
  const sized = (bytes: number) => remoteChannelSizing(allToAll(2), { ...defaults, channelBufferBytes: bytes, capacityExplicit: true });
  assert.deepEqual(sized(3 * MiB), { ringBytes: 2 * MiB, creditRecords: 131_072 });
  assert.equal(sized(1).ringBytes, 64 * 1024);
  assert.equal(sized(1e12).ringBytes, 4 * MiB);
  // The credit is never below the configured records.
  assert.equal(sized(64 * 1024).creditRecords, 16_384);
  for (const bad of [0, -1, Number.NaN]) {
    assert.throws(() => sized(bad), (e: unknown) => e instanceof EddyError && e.code === "INVALID_CHANNEL_BUFFER" && e.domain === "config");
  }
});
