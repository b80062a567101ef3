import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { moveSavepoint } from "./move-savepoint.ts";

/** A savepoint-like directory with a nested file, in a fresh temporary directory under `root`. */
function savepointIn(root: string): { dir: string; path: string } {
  const dir = mkdtempSync(join(root, "eddy-move-"));
  const path = join(dir, "savepoint-3");
  mkdirSync(join(path, "state"), { recursive: true });
  writeFileSync(join(path, "_metadata"), "manifest");
  writeFileSync(join(path, "state", "op-0"), "cells");
  return { dir, path };
}

function assertMoved(from: string, to: string): void {
  assert.equal(existsSync(from), false);
  assert.equal(readFileSync(join(to, "_metadata"), "utf8"), "manifest");
  assert.equal(readFileSync(join(to, "state", "op-0"), "utf8"), "cells");
}

test("moves a savepoint directory into a directory it creates, and never overwrites one already there", async () => {
  const { dir, path } = savepointIn(tmpdir());
  try {
    const into = join(dir, "kept", "savepoints");
    const moved = await moveSavepoint(path, into);
    assert.equal(moved, join(into, "savepoint-3"));
    assertMoved(path, moved);

    const again = savepointIn(dir);
    await assert.rejects(moveSavepoint(again.path, into), { code: "SAVEPOINT_EXISTS" });
    assert.ok(existsSync(join(again.path, "_metadata")), "the original stays");
    await assert.rejects(moveSavepoint(join(dir, "missing"), into), { code: "SAVEPOINT_NOT_FOUND" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// /dev/shm is a tmpfs on Linux: moving from there to the temporary directory crosses file systems.
const otherFs = existsSync("/dev/shm") && statSync("/dev/shm").dev !== statSync(tmpdir()).dev;

test("across file systems (EXDEV) copies the savepoint, then removes the original", { skip: !otherFs && "no second file system" }, async () => {
  const { dir, path } = savepointIn("/dev/shm");
  const into = mkdtempSync(join(tmpdir(), "eddy-move-into-"));
  try {
    const moved = await moveSavepoint(path, into);
    assert.equal(moved, join(into, "savepoint-3"));
    assertMoved(path, moved);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(into, { recursive: true, force: true });
  }
});
