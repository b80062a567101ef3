/** How a client turns an endpoint's error answer back into an EddyError (answerError). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { EddyError } from "../core/errors.ts";
import { createServer } from "node:http";
import { answerError, errorBody, listen } from "./http-endpoint.ts";

const blame = { domain: "config", retryable: false } as const;

test("an error answer with a known code is that code, with the message and the blame the client derived from the status", () => {
  const e = answerError(409, errorBody("SAVEPOINT_NEEDS_CHECKPOINTING", "runs without checkpointing"), "fallback", blame);
  assert.ok(e instanceof EddyError);
  assert.deepEqual([e.code, e.message, e.domain, e.retryable], ["SAVEPOINT_NEEDS_CHECKPOINTING", "runs without checkpointing", "config", false]);
});

test("an error answer with an unknown code, or none, is UNKNOWN_ERROR_CODE naming the status and the code", () => {
  const unknown = answerError(500, { error: { code: "DISK_ON_FIRE", message: "smoke" } }, "fallback", { domain: "external", retryable: true });
  assert.deepEqual([unknown.code, unknown.message, unknown.domain, unknown.retryable], ["UNKNOWN_ERROR_CODE", "smoke (HTTP 500 with the unknown code 'DISK_ON_FIRE')", "external", true]);
  for (const body of [undefined, null, "text", { error: { code: 42 } }, { error: null }]) {
    const e = answerError(502, body, "GET /v1/job answered 502", blame);
    assert.equal(e.code, "UNKNOWN_ERROR_CODE");
    assert.equal(e.message, "GET /v1/job answered 502 (HTTP 502 with no code)");
  }
});

test("a listening server's later errors (a failed accept) go to the handler, not to an uncaught exception", async () => {
  const server = createServer();
  const heard: string[] = [];
  await listen(server, "127.0.0.1", (e) => heard.push(e.message));
  try {
    // What Node does when accept() fails: emit 'error' on the server, which keeps listening.
    server.emit("error", Object.assign(new Error("accept EMFILE"), { code: "EMFILE" }));
    assert.deepEqual(heard, ["accept EMFILE"]);
    assert.equal(server.listening, true);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
