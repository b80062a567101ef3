import assert from "node:assert/strict";
import { test } from "node:test";
import { EddyError } from "../../core/errors.ts";
import { isClosedConnection, isRefusedMessage, isTransient } from "./nats-client.ts";
import { parseNatsSplit, type NatsSplit } from "./nats-split.ts";

const split: NatsSplit = { v: 1, splitId: "S/a.>", stream: "S", subject: "a.>", next: 42, startTimeMs: null, startNew: false, stopAt: -1, bounded: true };

test("a split read back from a checkpoint is the split; anything else is CHECKPOINT_CORRUPT", () => {
  assert.deepEqual(parseNatsSplit(JSON.parse(JSON.stringify(split))), split);
  // With acknowledgements: the next fetched sequence and the delivering consumer.
  const acked: NatsSplit = { ...split, ahead: 43, delivered: { consumer: "job_a_1234abcd", created: "2026-12-02T17:00:00Z", seq: 41 } };
  assert.deepEqual(parseNatsSplit(JSON.parse(JSON.stringify(acked))), acked);
  const delivered = acked.delivered!;
  for (const bad of [
    null,
    3,
    { ...split, v: 2 },
    { ...split, next: -1 },
    { ...split, next: 1.5 },
    { ...split, stopAt: -2 },
    { ...split, subject: 7 },
    { ...split, startTimeMs: "x" },
    { ...split, bounded: "yes" },
    { ...split, ahead: -1 },
    { ...split, delivered: null },
    { ...split, delivered: { ...delivered, seq: "41" } },
    { ...split, delivered: { ...delivered, created: 0 } },
  ]) {
    assert.throws(() => parseNatsSplit(bad), (e: unknown) => e instanceof EddyError && e.code === "CHECKPOINT_CORRUPT", JSON.stringify(bad));
  }
});

test("client errors are classified: transient ones are retried, refused messages go to the error policy, a closed connection fails", () => {
  const named = (name: string, message = name, extra: Record<string, unknown> = {}) => Object.assign(new Error(message), { name }, extra);
  assert.ok(isTransient(named("TimeoutError", "timeout")));
  assert.ok(isTransient(named("RequestError", "request failed", { cause: named("NoRespondersError", "no responders") })));
  assert.ok(isTransient(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })));
  assert.ok(!isTransient(named("JetStreamApiError", "stream not found", { code: 10059 })));
  assert.ok(isRefusedMessage(named("JetStreamApiError", "message size exceeds maximum allowed", { code: 10054 })));
  assert.ok(isRefusedMessage(named("InvalidArgumentError", "'payload' max_payload size exceeded")));
  assert.ok(!isRefusedMessage(named("TimeoutError", "timeout")));
  assert.ok(isClosedConnection(named("RequestError", "x", { cause: named("ClosedConnectionError", "closed connection") })));
  assert.ok(!isClosedConnection(named("TimeoutError")));
});
