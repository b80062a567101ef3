/**
 * The keyed state backend contract (testing/keyed-state-backend-contract.ts) against the disk
 * backend: with a cache of 1 key (every key switch evicts to the store), of 1,000 keys (the test's
 * keys stay cached), of 1,000 keys but 2 KiB (the byte bound evicts: a few keys fit), and across
 * backends both ways (snapshots are backend-neutral).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";
import { keyedStateBackendContract } from "../testing/keyed-state-backend-contract.ts";
import { DiskKeyedStateBackend } from "./disk-keyed-state-backend.ts";
import { heapStateBackend } from "./heap-keyed-state-backend.ts";
import type { KeyedStateBackendFactory } from "./keyed-state-backend.ts";

const root = mkdtempSync(join(tmpdir(), "eddy-disk-contract-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const disk =
  (cacheSize: number, cacheBytes?: number): KeyedStateBackendFactory =>
  (options) =>
    new DiskKeyedStateBackend({ ...options, storeDir: join(root, String(n++)), cacheSize, ...(cacheBytes === undefined ? {} : { cacheBytes }) });

keyedStateBackendContract("disk (cache 1)", disk(1));
keyedStateBackendContract("disk (cache 1000)", disk(1000));
keyedStateBackendContract("disk (cache 1000 keys, 2 KiB)", disk(1000, 2048));
keyedStateBackendContract("disk → heap", disk(1), heapStateBackend);
keyedStateBackendContract("heap → disk", heapStateBackend, disk(1));
