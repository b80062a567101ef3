/** The built-in serializers' bytes: UTF-8 as TextEncoder writes it (lone surrogates as U+FFFD). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { toBytes, valueSerializer } from "./serde.ts";

const reference = new TextEncoder();
const samples = ["", "plain ascii", "é ü ß", "日本語", "emoji 😀", "lone \uD800 high", "lone \uDC00 low", "x".repeat(5000)];

test("string, json and function serializers write the UTF-8 bytes TextEncoder writes", async () => {
  const asString = valueSerializer<string>("string");
  const asJson = valueSerializer<{ s: string }>("json");
  const asFunction = valueSerializer<string>((s) => s);
  for (const s of samples) {
    assert.deepEqual([...(asString(s, "t") as Uint8Array)], [...reference.encode(s)], JSON.stringify(s));
    assert.deepEqual([...(asJson({ s }, "t") as Uint8Array)], [...reference.encode(JSON.stringify({ s }))], JSON.stringify(s));
    assert.deepEqual([...(asFunction(s, "t") as Uint8Array)], [...reference.encode(s)], JSON.stringify(s));
    assert.deepEqual([...toBytes(s)!], [...reference.encode(s)]);
  }
  assert.equal(toBytes(null), null);
  const bytes = new Uint8Array([1, 2, 3]);
  assert.equal(toBytes(bytes), bytes, "bytes pass through");
});
