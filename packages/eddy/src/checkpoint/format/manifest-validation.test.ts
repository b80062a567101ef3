import assert from "node:assert/strict";
import { test } from "node:test";
import { EddyError } from "../../core/errors.ts";
import { CELL_FORMAT } from "../../state/keyed-state-meta.ts";
import { MANIFEST_FORMAT, MANIFEST_VERSION, type CheckpointManifest } from "./manifest.ts";
import { validateManifest } from "./manifest-validation.ts";

const WHERE = "savepoint '/backups/sp-1'";
const SHA = "a".repeat(64);

/** A well-formed manifest: a source at parallelism 1, a keyed operator at parallelism 2 (128 key groups). */
function manifest(): CheckpointManifest {
  const keyedMeta = (start: number, end: number): object => ({
    operatorId: "count",
    operatorName: "Count",
    keyed: {
      keyGroupRange: { start, end },
      states: [
        { name: "count", kind: "value", ttl: undefined, copy: "deep", format: CELL_FORMAT, codec: { id: "counter", version: 2 } },
        { name: "seen", kind: "list", ttl: { ttlMs: 1000, updateType: "onCreateAndWrite" }, copy: "deep", format: CELL_FORMAT },
      ],
      watermark: null,
    },
    operatorStates: [],
  });
  const value = {
    format: MANIFEST_FORMAT,
    version: MANIFEST_VERSION,
    jobId: "job",
    jobName: "job",
    checkpointId: 7,
    generation: 0,
    isSavepoint: true,
    isFinal: false,
    triggeredAtMs: 1_700_000_000_000,
    completedAtMs: 1_700_000_000_050,
    operators: {
      src: { name: "Source", parallelism: 1, maxParallelism: 128 },
      count: { name: "Count", parallelism: 2, maxParallelism: 128 },
    },
    tasks: [
      {
        taskId: "0-0",
        chain: 0,
        subtask: 0,
        file: { name: "task-0-0.snap", size: 100, sha256: SHA },
        operators: [{ operatorId: "src", operatorName: "Source", operatorStates: [{ name: "source-splits", mode: "split", count: 1 }] }],
      },
      { taskId: "1-0", chain: 1, subtask: 0, file: { name: "task-1-0.snap", size: 10, sha256: SHA }, operators: [keyedMeta(0, 63)] },
      { taskId: "1-1", chain: 1, subtask: 1, file: null, operators: [keyedMeta(64, 127)] },
    ],
    enumerators: {},
  };
  // Through JSON, as read from disk (undefined fields disappear).
  return JSON.parse(JSON.stringify(value)) as CheckpointManifest;
}

/** A mutable copy of `manifest()` changed by `edit`. */
function hostile(edit: (m: any) => void): CheckpointManifest {
  const m = manifest() as any;
  edit(m);
  return m as CheckpointManifest;
}

function rejects(m: CheckpointManifest, code: string, message: RegExp): void {
  assert.throws(
    () => validateManifest(m, WHERE),
    (e: unknown) => {
      assert.ok(e instanceof EddyError, `an EddyError, got ${String(e)}`);
      assert.equal(e.code, code, e.message);
      assert.match(e.message, message);
      assert.ok(e.message.startsWith(`${WHERE}: `), `names the savepoint: ${e.message}`);
      return true;
    },
  );
}

test("a well-formed manifest passes", () => {
  validateManifest(manifest(), WHERE);
});

test("file names that are paths, hidden or empty are refused, so nothing outside the directory is read", () => {
  for (const name of ["../outside.snap", "/etc/passwd", "a/b", "..", ".hidden", "", "_manifest", "a\\b"]) {
    rejects(hostile((m) => (m.tasks[0].file.name = name)), "CHECKPOINT_CORRUPT", /task 0-0 names file .*not a plain file name in the directory/);
  }
  rejects(hostile((m) => (m.tasks[0].file.name = 42)), "CHECKPOINT_CORRUPT", /names file 42/);
});

test("an incremental chain must list well-formed shared files, and only in a checkpoint (a savepoint is self-contained)", () => {
  const ref = { name: "task-1-0-0-base-3-ab.kgs", size: 10, sha256: SHA };
  const checkpoint = (edit: (m: any) => void): CheckpointManifest =>
    hostile((m) => {
      m.isSavepoint = false;
      edit(m);
    });
  validateManifest(checkpoint((m) => (m.tasks[1].operators[0].keyed.incremental = { chain: [ref] })), WHERE);
  rejects(checkpoint((m) => (m.tasks[1].operators[0].keyed.incremental = { chain: [] })), "CHECKPOINT_CORRUPT", /malformed incremental chain for operator 'count'/);
  rejects(checkpoint((m) => (m.tasks[1].operators[0].keyed.incremental = [ref])), "CHECKPOINT_CORRUPT", /malformed incremental chain/);
  rejects(checkpoint((m) => (m.tasks[1].operators[0].keyed.incremental = { chain: [{ ...ref, name: "../shared/x.kgs" }] })), "CHECKPOINT_CORRUPT", /names file .*not a plain file name/);
  rejects(checkpoint((m) => (m.tasks[1].operators[0].keyed.incremental = { chain: [{ ...ref, sha256: "x" }] })), "CHECKPOINT_CORRUPT", /invalid sha256/);
  validateManifest(checkpoint((m) => (m.tasks[1].operators[0].keyed.incremental = { chain: [{ ...ref, indexSha256: SHA }] })), WHERE);
  rejects(checkpoint((m) => (m.tasks[1].operators[0].keyed.incremental = { chain: [{ ...ref, indexSha256: 7 }] })), "CHECKPOINT_CORRUPT", /invalid indexSha256 7/);
  rejects(checkpoint((m) => (m.tasks[1].operators[0].keyed.incremental = { chain: [{ ...ref, indexSha256: SHA.slice(1) }] })), "CHECKPOINT_CORRUPT", /invalid indexSha256/);
  rejects(hostile((m) => (m.tasks[1].operators[0].keyed.incremental = { chain: [ref] })), "CHECKPOINT_CORRUPT", /a savepoint is self-contained/);
});

test("file sizes and checksums must be well formed, and a file belongs to one task", () => {
  for (const size of [-1, 1.5, "10", 2 ** 60, null]) {
    rejects(hostile((m) => (m.tasks[0].file.size = size)), "CHECKPOINT_CORRUPT", /file 'task-0-0.snap' has an invalid size/);
  }
  for (const sha256 of ["abc", "g".repeat(64), undefined]) {
    rejects(hostile((m) => (m.tasks[0].file.sha256 = sha256)), "CHECKPOINT_CORRUPT", /file 'task-0-0.snap' has an invalid sha256/);
  }
  rejects(hostile((m) => (m.tasks[1].file.name = "task-0-0.snap")), "CHECKPOINT_CORRUPT", /file 'task-0-0.snap' is listed by two tasks/);
  // Above what a reader takes into memory: refused here, naming the file, before it is opened.
  rejects(hostile((m) => (m.tasks[0].file.size = 2 ** 31)), "CHECKPOINT_CORRUPT", /file 'task-0-0.snap' has 2147483648 bytes, more than the 2147483647 a snapshot file may have/);
});

test("tasks need integral chain and subtask indices, once each", () => {
  rejects(hostile((m) => (m.tasks[0].chain = -1)), "CHECKPOINT_CORRUPT", /task entry 0 has an invalid chain -1/);
  rejects(hostile((m) => (m.tasks[1].subtask = 0.5)), "CHECKPOINT_CORRUPT", /task entry 1 has an invalid chain 1 or subtask 0.5/);
  rejects(hostile((m) => (m.tasks[2].subtask = 0)), "CHECKPOINT_CORRUPT", /task 1-0 is listed twice/);
  rejects(hostile((m) => (m.tasks[0] = "task")), "CHECKPOINT_CORRUPT", /task entry 0 is not an object/);
  rejects(hostile((m) => (m.tasks[2].subtask = 2)), "CHECKPOINT_CORRUPT", /task 1-2 is subtask 2 of operator 'count', which ran at parallelism 2/);
});

test("operators need 1 ≤ parallelism ≤ maxParallelism ≤ 32768", () => {
  rejects(hostile((m) => (m.operators.count.parallelism = 0)), "CHECKPOINT_CORRUPT", /operator 'count' has parallelism 0, not an integer in \[1, 128\]/);
  rejects(hostile((m) => (m.operators.count.parallelism = 200)), "CHECKPOINT_CORRUPT", /operator 'count' has parallelism 200/);
  rejects(hostile((m) => (m.operators.count.maxParallelism = 65536)), "CHECKPOINT_CORRUPT", /operator 'count' has max parallelism 65536, not an integer in \[1, 32768\]/);
  rejects(hostile((m) => (m.operators.count.maxParallelism = "128")), "CHECKPOINT_CORRUPT", /operator 'count' has max parallelism "128"/);
  rejects(hostile((m) => (m.operators = [])), "CHECKPOINT_CORRUPT", /'operators' must be an object/);
});

test("a task may only describe operators the manifest lists (own properties only)", () => {
  for (const uid of ["missing", "constructor", "__proto__", "toString"]) {
    rejects(hostile((m) => (m.tasks[0].operators[0].operatorId = uid)), "CHECKPOINT_CORRUPT", new RegExp(`operator '${uid}', which the manifest's operators do not list`));
  }
});

test("key-group ranges are integral, ordered, within max parallelism and disjoint between subtasks", () => {
  const range = (start: unknown, end: unknown) => hostile((m) => (m.tasks[2].operators[0].keyed.keyGroupRange = { start, end }));
  rejects(range(64, 128), "CHECKPOINT_CORRUPT", /operator 'count' subtask 1 has key-group range \[64, 128\], not within \[0, 127\] \(max parallelism 128\)/);
  rejects(range(70, 64), "CHECKPOINT_CORRUPT", /key-group range \[70, 64\]/);
  rejects(range(-1, 10), "CHECKPOINT_CORRUPT", /key-group range \[-1, 10\]/);
  rejects(range(1.5, 10), "CHECKPOINT_CORRUPT", /key-group range \[1.5, 10\]/);
  rejects(range(63, 127), "CHECKPOINT_CORRUPT", /operator 'count' subtasks 0 and 1 have overlapping key-group ranges \[0, 63\] and \[63, 127\]/);
});

test("keyed states need a readable format, a known kind, and a well-formed TTL and codec", () => {
  const state = (edit: (s: any) => void) => hostile((m) => edit(m.tasks[1].operators[0].keyed.states[0]));
  rejects(
    state((s) => (s.format = "eddy.arrow/3")),
    "CHECKPOINT_UNSUPPORTED",
    /state 'count' of operator 'count' is written in format 'eddy.arrow\/3', which this Eddy cannot read \(it reads eddy.default\/3, eddy.default\/2, eddy.default\/1\)/,
  );
  rejects(state((s) => delete s.format), "CHECKPOINT_CORRUPT", /state 'count' of operator 'count' has no cell format/);
  rejects(state((s) => (s.kind = "queue")), "CHECKPOINT_CORRUPT", /state 'count' of operator 'count' has unknown kind "queue"/);
  rejects(state((s) => (s.kind = "constructor")), "CHECKPOINT_CORRUPT", /unknown kind "constructor"/);
  rejects(state((s) => (s.codec = { id: "", version: 1 })), "CHECKPOINT_CORRUPT", /state 'count' of operator 'count' has a malformed codec/);
  rejects(state((s) => (s.codec = { id: "c", version: 0 })), "CHECKPOINT_CORRUPT", /has a malformed codec/);
  rejects(state((s) => (s.codec = "counter@2")), "CHECKPOINT_CORRUPT", /has a malformed codec "counter@2"/);
  rejects(state((s) => (s.ttl = { ttlMs: -5, updateType: "onCreateAndWrite" })), "CHECKPOINT_CORRUPT", /state 'count' of operator 'count' has a malformed TTL/);
  rejects(state((s) => (s.copy = "shallow")), "CHECKPOINT_CORRUPT", /invalid copy mode "shallow"/);
  rejects(state((s) => (s.name = "seen")), "CHECKPOINT_CORRUPT", /state 'seen' of operator 'count' is described twice in task 1-0/);
  // Subtask 1 still says version 2.
  rejects(state((s) => (s.codec.version = 3)), "CHECKPOINT_CORRUPT", /the subtasks describe state 'count' of operator 'count' differently/);
});

test("operator states have mode split or union and an integral count", () => {
  const opState = (edit: (s: any) => void) => hostile((m) => edit(m.tasks[0].operators[0].operatorStates[0]));
  rejects(opState((s) => (s.mode = "gather")), "CHECKPOINT_CORRUPT", /operator state 'source-splits' of operator 'src' has mode "gather", expected "split", "union" or "broadcast"/);
  rejects(opState((s) => (s.count = -1)), "CHECKPOINT_CORRUPT", /operator 'src' has a malformed operator state entry/);
  rejects(hostile((m) => (m.tasks[0].file = null)), "CHECKPOINT_CORRUPT", /task 0-0 has operator state of 'src' but no file/);
});

test("operator-state counts must fit the task's file: every value takes at least a byte", () => {
  // The file of task 0-0 has 100 bytes.
  validateManifest(hostile((m) => (m.tasks[0].operators[0].operatorStates[0].count = 100)), WHERE);
  rejects(
    hostile((m) => (m.tasks[0].operators[0].operatorStates[0].count = 1e12)),
    "CHECKPOINT_CORRUPT",
    /task 0-0 counts 1000000000000 operator-state values, more than the 100 bytes of its file 'task-0-0.snap' could hold/,
  );
  rejects(
    hostile((m) => m.tasks[0].operators[0].operatorStates.push({ name: "more", mode: "union", count: 51 }, { name: "most", mode: "split", count: 49 })),
    "CHECKPOINT_CORRUPT",
    /task 0-0 counts 101 operator-state values, more than the 100 bytes/,
  );
});

test("top-level fields are typed", () => {
  rejects(hostile((m) => (m.checkpointId = -3)), "CHECKPOINT_CORRUPT", /'checkpointId' must be a non-negative integer, got -3/);
  rejects(hostile((m) => (m.isSavepoint = "yes")), "CHECKPOINT_CORRUPT", /'isSavepoint' must be a boolean/);
  rejects(hostile((m) => (m.completedAtMs = null)), "CHECKPOINT_CORRUPT", /'completedAtMs' must be a time in ms/);
  rejects(hostile((m) => (m.jobName = 5)), "CHECKPOINT_CORRUPT", /'jobName' must be a string/);
  rejects(hostile((m) => (m.enumerators = null)), "CHECKPOINT_CORRUPT", /'enumerators' must be an object/);
});
