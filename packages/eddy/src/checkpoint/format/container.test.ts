import { test } from "node:test";
import assert from "node:assert/strict";
import { crc32 } from "node:zlib";
import fc from "fast-check";
import { EddyError } from "../../core/errors.ts";
import { SnapshotFile, encodeSnapshotFile, type SnapshotSection } from "./container.ts";

const fileName = "op-3-1.snap";
const parse = (bytes: Uint8Array, expectKind?: string): SnapshotFile =>
  SnapshotFile.parse(bytes, expectKind === undefined ? { fileName } : { fileName, expectKind });

/** Asserts that `fn` throws CHECKPOINT_CORRUPT naming the file and matching `message`. */
function assertCorrupt(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof EddyError, String(e));
    assert.equal(e.code, "CHECKPOINT_CORRUPT");
    assert.equal(e.domain, "external");
    assert.equal(e.retryable, false);
    assert.match(e.message, new RegExp(`'${fileName}'`));
    assert.match(e.message, message);
    return true;
  });
}

/** A file with a valid CRC and end magic around whatever header and body a test wants. */
function rawFile(header: string, body: Uint8Array, version = 1, flags = 0): Uint8Array {
  const h = new TextEncoder().encode(header);
  const out = new Uint8Array(16 + h.length + body.length + 8);
  const view = new DataView(out.buffer);
  out.set(new TextEncoder().encode("EDDYCKPT"));
  view.setUint16(8, version, true);
  view.setUint16(10, flags, true);
  view.setUint32(12, h.length, true);
  out.set(h, 16);
  out.set(body, 16 + h.length);
  const at = out.length - 8;
  view.setUint32(at, crc32(out.subarray(0, at)), true);
  out.set(new TextEncoder().encode("EDDY"), at + 4);
  return out;
}

const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);

test("round-trips kind, meta and sections, with and without key groups", () => {
  const sections: SnapshotSection[] = [
    { name: "operator", bytes: bytes(9, 8) },
    { name: "keyed", keyGroup: 0, bytes: bytes(1) },
    { name: "keyed", keyGroup: 7, bytes: bytes(2, 3, 4) },
    { name: "timers", keyGroup: 7, bytes: bytes() },
  ];
  const meta = { operator: "window-1", subtask: 3, range: [0, 31], note: "ünïcode ✓" };
  const file = parse(encodeSnapshotFile("task-snapshot", meta, sections), "task-snapshot");
  assert.equal(file.kind, "task-snapshot");
  assert.equal(file.version, 1);
  assert.deepEqual(file.meta, meta);
  assert.deepEqual(file.sections, [
    { name: "operator", keyGroup: undefined, length: 2 },
    { name: "keyed", keyGroup: 0, length: 1 },
    { name: "keyed", keyGroup: 7, length: 3 },
    { name: "timers", keyGroup: 7, length: 0 },
  ]);
  for (const s of sections) assert.deepEqual(file.section(s.name, s.keyGroup), s.bytes);
  assert.equal(file.section("keyed"), undefined, "a key-grouped section is not found without its key group");
  assert.equal(file.section("operator", 0), undefined);
  assert.equal(file.section("keyed", 1), undefined);
});

test("round-trips a file with no sections and one with many", () => {
  const empty = parse(encodeSnapshotFile("manifest", null, []));
  assert.equal(empty.meta, null);
  assert.deepEqual(empty.sections, []);

  const many: SnapshotSection[] = [];
  for (let kg = 0; kg < 1000; kg++) many.push({ name: "state", keyGroup: kg, bytes: Uint8Array.from({ length: kg % 17 }, (_, i) => kg + i) });
  const file = parse(encodeSnapshotFile("task-snapshot", { n: 1000 }, many));
  assert.equal(file.sections.length, 1000);
  for (const s of many) assert.deepEqual(file.section("state", s.keyGroup), s.bytes);
});

test("version 1 layout is pinned by a fixture", () => {
  // Written by the first version of encodeSnapshotFile; checked independently with Python's zlib.crc32.
  const fixture =
    "45444459434b5054010000006e0000007b226b696e64223a227461736b222c226d657461223a7b2276223a317d2c2273" +
    "656374696f6e73223a5b7b226e616d65223a2273222c226b657947726f7570223a332c226f6666736574223a302c226c" +
    "656e677468223a332c226372633332223a313433383431363932357d5d7d01020304812d4845444459";
  const encoded = encodeSnapshotFile("task", { v: 1 }, [{ name: "s", keyGroup: 3, bytes: bytes(1, 2, 3) }]);
  assert.equal(Buffer.from(encoded).toString("hex"), fixture);
  const file = parse(Uint8Array.from(Buffer.from(fixture, "hex")));
  assert.deepEqual(file.meta, { v: 1 });
  assert.deepEqual(file.section("s", 3), bytes(1, 2, 3));
});

test("refuses duplicate sections and invalid key groups when encoding", () => {
  const dup = [
    { name: "a", keyGroup: 1, bytes: bytes() },
    { name: "a", keyGroup: 1, bytes: bytes(1) },
  ];
  assert.throws(() => encodeSnapshotFile("k", null, dup), /duplicate section 'a' \(key group 1\)/);
  encodeSnapshotFile("k", null, [{ name: "a", bytes: bytes() }, { name: "a", keyGroup: 1, bytes: bytes() }]);
  assert.throws(() => encodeSnapshotFile("k", null, [{ name: "a", keyGroup: -1, bytes: bytes() }]), /invalid key group -1/);
  assert.throws(() => encodeSnapshotFile("k", 10n, []), /not JSON-serializable/);
});

test("names the fault: truncation, magic, version, end magic, checksum, kind", () => {
  const good = encodeSnapshotFile("task-snapshot", { a: 1 }, [{ name: "s", bytes: bytes(1, 2, 3) }]);
  assertCorrupt(() => parse(good.subarray(0, 20)), /is truncated: 20 bytes, needs at least 24/);
  const badMagic = good.slice();
  badMagic[0] = 0x58;
  assertCorrupt(() => parse(badMagic), /bad magic/);
  const v7 = good.slice();
  v7[8] = 7;
  assertCorrupt(() => parse(v7), /unsupported format version 7 \(this Eddy reads 1, 2\)/);
  assertCorrupt(() => parse(good.subarray(0, good.length - 1)), /end magic/);
  const flipped = good.slice();
  flipped[good.length - 12]! ^= 0x10;
  assertCorrupt(() => parse(flipped), /checksum mismatch: stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}/);
  assertCorrupt(() => parse(good, "manifest"), /is a 'task-snapshot' file, expected 'manifest'/);
});

test("refuses well-checksummed files whose header does not describe the body", () => {
  const entry = (o: object): string => JSON.stringify({ kind: "k", meta: null, sections: [o] });
  const s = { name: "s", offset: 0, length: 2, crc32: crc32(bytes(1, 2)) };
  assert.deepEqual(parse(rawFile(entry(s), bytes(1, 2))).section("s"), bytes(1, 2));
  assertCorrupt(() => parse(rawFile("{not json", bytes())), /not valid UTF-8 JSON/);
  assertCorrupt(() => parse(rawFile(JSON.stringify({ kind: 1, sections: [] }), bytes())), /malformed header/);
  assertCorrupt(() => parse(rawFile(entry({ ...s, length: -1 }), bytes(1, 2))), /malformed section entry/);
  assertCorrupt(() => parse(rawFile(entry(s), bytes(1))), /does not follow on at 0 within the 1-byte body/);
  assertCorrupt(() => parse(rawFile(entry({ ...s, offset: 1, length: 1 }), bytes(1, 2))), /does not follow on/);
  assertCorrupt(() => parse(rawFile(entry(s), bytes(1, 2, 3))), /3-byte body but its sections cover 2 bytes/);
  const two = JSON.stringify({ kind: "k", sections: [s, { ...s, offset: 2 }] });
  assertCorrupt(() => parse(rawFile(two, bytes(1, 2, 1, 2))), /duplicate section 's'/);
  assertCorrupt(() => parse(rawFile(entry(s), bytes(1, 2), 1, 4)), /unsupported flags/);
  // The whole-file CRC is right but the section's own CRC is not: only section() can tell.
  const file = parse(rawFile(entry(s), bytes(1, 3)));
  assertCorrupt(() => file.section("s"), /section 's' checksum mismatch/);
});

const sectionsArb = fc.uniqueArray(
  fc.record(
    { name: fc.constantFrom("a", "keyed", "timers", ""), keyGroup: fc.nat({ max: 5 }), bytes: fc.uint8Array({ maxLength: 40 }) },
    { requiredKeys: ["name", "bytes"] },
  ),
  { selector: (s) => `${s.keyGroup}/${s.name}`, maxLength: 6 },
);
const fileArb = fc.record({ kind: fc.string({ maxLength: 10 }), meta: fc.jsonValue({ maxDepth: 2 }), sections: sectionsArb });

test("property: every encoded file parses back to what was encoded", () => {
  fc.assert(
    fc.property(fileArb, ({ kind, meta, sections }) => {
      const file = parse(encodeSnapshotFile(kind, meta, sections));
      assert.equal(file.kind, kind);
      assert.deepEqual(file.meta, JSON.parse(JSON.stringify(meta)));
      for (const s of sections) assert.deepEqual(file.section(s.name, s.keyGroup), s.bytes);
    }),
  );
});

test("property: any single bit flip and any truncation is detected", () => {
  fc.assert(
    fc.property(fileArb, fc.nat(), fc.nat(), ({ kind, meta, sections }, bitSeed, cutSeed) => {
      const good = encodeSnapshotFile(kind, meta, sections);
      const bit = bitSeed % (good.length * 8);
      const flipped = good.slice();
      flipped[bit >> 3]! ^= 1 << (bit & 7);
      assertCorrupt(() => parse(flipped), /./);
      assertCorrupt(() => parse(good.subarray(0, cutSeed % good.length)), /./);
    }),
    { numRuns: 500 },
  );
});

test("a header nested deeper than 64 levels is refused before it is parsed, and never written", () => {
  // Parsing such a header works; any recursive walk of it (structuredClone, JSON.stringify) overflows the stack.
  const nested = (depth: number): string => `${"[".repeat(depth)}${"]".repeat(depth)}`;
  // The header object itself is one level: meta may nest 63 more.
  const header = (meta: string): string => `{"kind":"task","meta":${meta},"sections":[]}`;
  assert.deepEqual(parse(rawFile(header(nested(63)), bytes())).sections, []);
  assertCorrupt(() => parse(rawFile(header(nested(64)), bytes())), /has a header nested deeper than 64 levels/);
  assertCorrupt(() => parse(rawFile(header(nested(100_000)), bytes())), /has a header nested deeper than 64 levels/);
  // Brackets inside strings do not count.
  assert.deepEqual(parse(rawFile(header(`{"a":"${"[".repeat(100)}\\\"{"}`), bytes())).meta, { a: `${"[".repeat(100)}"{` });
  let deep: unknown[] = [];
  for (let i = 0; i < 64; i++) deep = [deep];
  assert.throws(() => encodeSnapshotFile("manifest", deep, []), { code: "INVALID_CHECKPOINT_META", message: /nested deeper than 64 levels/ });
});

test("a header over 64 MiB is never written", () => {
  assert.throws(() => encodeSnapshotFile("manifest", "x".repeat(64 * 1024 * 1024), []), { code: "INVALID_CHECKPOINT_META", message: /header of \d+ bytes, more than the 67108864/ });
});
