import assert from "node:assert/strict";
import { test } from "node:test";
import { flameTree, MAX_FLAME_NODES } from "./thread-profile.ts";

const frame = (functionName: string, url = "file:///job.ts", lineNumber = 0) => ({ functionName, url, lineNumber, columnNumber: 0 });

test("flameTree folds V8's profile nodes by function and location, sums samples, and drops nodes under 0.2 % into their parent's self time", () => {
  const tree = flameTree([
    { id: 1, callFrame: frame("(root)", ""), hitCount: 0, children: [2, 3, 6] },
    { id: 2, callFrame: frame("(idle)", ""), hitCount: 500, children: [] },
    { id: 3, callFrame: frame("process", "file:///job.ts", 9), hitCount: 100, children: [4, 5] },
    { id: 4, callFrame: frame("parse"), hitCount: 150, children: [] },
    { id: 5, callFrame: frame("parse"), hitCount: 50, children: [] },
    // The same function and location called from the root again: merged with node 3.
    { id: 6, callFrame: frame("process", "file:///job.ts", 9), hitCount: 199, children: [7] },
    { id: 7, callFrame: frame("tiny"), hitCount: 1, children: [] },
  ]);
  assert.equal(tree.name, "(root)");
  assert.equal(tree.total, 1_000);
  assert.deepEqual(
    tree.children.map((c) => [c.name, c.location, c.total, c.self]),
    [
      ["(idle)", "", 500, 500],
      ["process", "file:///job.ts:10:1", 500, 300],
    ],
  );
  // parse, merged (150 + 50); tiny (1 of 1,000 samples, under 0.2 %) dropped into process's self time.
  assert.deepEqual(tree.children[1]!.children.map((c) => [c.name, c.total]), [["parse", 200]]);
});

test("flameTree keeps at most MAX_FLAME_NODES nodes, the outermost callers first", () => {
  // A call chain deeper than the bound, every frame heavy enough to be kept by its share.
  const depth = MAX_FLAME_NODES + 500;
  const nodes = Array.from({ length: depth }, (_, i) => ({ id: i, callFrame: frame(i === 0 ? "(root)" : `f${i}`, i === 0 ? "" : "file:///job.ts"), hitCount: i === depth - 1 ? 1_000 : 1, children: i === depth - 1 ? [] : [i + 1] }));
  const tree = flameTree(nodes);
  let count = 0;
  let deepest = tree;
  for (let n: typeof tree | undefined = tree; n !== undefined; n = n.children[0]) {
    count++;
    deepest = n;
  }
  assert.equal(count, MAX_FLAME_NODES);
  assert.equal(deepest.name, `f${MAX_FLAME_NODES - 1}`);
  assert.equal(deepest.self, deepest.total, "what is cut off counts as the last kept frame's self time");
  assert.equal(tree.total, depth - 1 + 1_000);
});
