/**
 * Doorbells: a peer's ring reaches a worker only while it is armed (about to sleep), once per
 * arming, and a busy worker is never sent a message.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MessageChannel } from "node:worker_threads";
import { createDoorbells, Doorbells } from "./doorbells.ts";

test("a ring wakes an armed worker once per arming, and posts nothing to a busy one", async () => {
  const shared = createDoorbells(2);
  const { port1, port2 } = new MessageChannel();
  const sleeper = new Doorbells(shared, 0, [undefined, port1]);
  const peer = new Doorbells(shared, 1, [port2, undefined]);
  let woken = 0;
  port1.on("message", () => woken++);
  const settle = () => new Promise((resolve) => setTimeout(resolve, 20));
  try {
    peer.ring(0); // busy: not armed
    await settle();
    assert.equal(woken, 0);
    sleeper.arm();
    peer.ring(0);
    peer.ring(0); // the first ring cleared the flag
    await settle();
    assert.equal(woken, 1);
    sleeper.arm();
    sleeper.disarm(); // woke for another reason
    peer.ring(0);
    await settle();
    assert.equal(woken, 1);
    sleeper.arm();
    peer.ring(0);
    await settle();
    assert.equal(woken, 2);
  } finally {
    port1.close();
    port2.close();
  }
});
