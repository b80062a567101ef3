import assert from "node:assert/strict";
import { test } from "node:test";
import { murmur2, partitionForKey } from "./murmur2.ts";

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

test("murmur2 equals Kafka's Java client (UtilsTest) and librdkafka (unittest_murmur2) on their vectors", () => {
  const java: [string, number][] = [
    ["21", -973932308],
    ["foobar", -790332482],
    ["a-little-bit-long-string", -985981536],
    ["a-little-bit-longer-string", -1486304829],
    ["lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971],
    ["abc", 479470107],
  ];
  for (const [key, expected] of java) assert.equal(murmur2(bytes(key)), expected, key);
  const librdkafka: [string, number][] = [
    ["kafka", 0xd067cf64],
    ["giberish123456789", 0x8f552b0c],
    ["1234", 0x9fc97b14],
    ["234", 0xe7c009ca],
    ["34", 0x873930da],
    ["4", 0x5a4b5ca1],
    ["PreAmbleWillBeRemoved,ThePrePartThatIs", 0x78424f1c],
    ["reAmbleWillBeRemoved,ThePrePartThatIs", 0x4a62b377],
    ["", 0x106e08d9],
  ];
  for (const [key, expected] of librdkafka) assert.equal(murmur2(bytes(key)) >>> 0, expected, key);
  // "kafka" → 0x5067cf64 after toPositive; % 10 = 0 (the Java DefaultPartitioner's answer).
  assert.equal(partitionForKey(bytes("kafka"), 10), 0);
  assert.equal(partitionForKey(bytes("test"), 10), 9);
});
