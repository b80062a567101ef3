/**
 * The shared files of incremental checkpoints (state/incremental-snapshot.ts) and how a key group
 * is read back from a chain of them. A shared file is a container file (container.ts: CRC-32 per
 * section and over the file; the manifest's FileRef adds size and SHA-256) of kind `keyed-base`
 * or `keyed-delta`, with one section `keyed` per key group that has anything.
 *
 * Restore turns a chain into the canonical key group (heap-snapshot.ts) — the base's cells, then
 * per delta: drop every changed key, add its cells — so any backend restores it, at any
 * parallelism: key groups are read one by one from whichever chain holds them.
 */
import { ByteReader, ByteWriter } from "../../core/codec/bytes.ts";
import { defaultCodec } from "../../core/codec/default-codec.ts";
import { mapKeyOf, type MapKey } from "../../core/key.ts";
import { readKeyGroup, writeCells, type RestoredCell } from "../../state/heap-snapshot.ts";
import { readDeltaHeader } from "../../state/incremental-snapshot.ts";
import type { KeyedStateMeta } from "../../state/keyed-state-meta.ts";
import { checkpointCorrupt, type SnapshotFile } from "./container.ts";

export const SHARED_BASE_KIND = "keyed-base";
export const SHARED_DELTA_KIND = "keyed-delta";
/** The section name of a key group in a shared file. */
export const SHARED_KEYED_SECTION = "keyed";

/**
 * Writes the canonical state part of `keyGroup` as the chain `files` (a base, then deltas, all
 * parsed and of the right kinds) holds it. `metaOf` describes every state the chain may hold.
 */
export function materializeKeyGroup(files: readonly SnapshotFile[], keyGroup: number, metaOf: (name: string) => KeyedStateMeta | undefined, out: ByteWriter): void {
  const states = new Map<string, Map<MapKey, RestoredCell[]>>();
  files.forEach((file, i) => {
    const isDelta = file.kind === SHARED_DELTA_KIND;
    if (isDelta === (i === 0) || (!isDelta && file.kind !== SHARED_BASE_KIND)) {
      throw checkpointCorrupt(`shared checkpoint file '${file.fileName}' is a ${file.kind} at position ${i} of its chain (a chain is one ${SHARED_BASE_KIND}, then ${SHARED_DELTA_KIND} files)`);
    }
    const bytes = file.section(SHARED_KEYED_SECTION, keyGroup);
    if (bytes === undefined) return;
    const input = new ByteReader(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    try {
      if (isDelta) {
        for (const [name, keys] of readDeltaHeader(input)) {
          const cells = states.get(name);
          if (cells !== undefined) for (const key of keys) cells.delete(mapKeyOf(key));
        }
      }
      readKeyGroup(input, metaOf, (meta, restored) => {
        let cells = states.get(meta.name);
        if (cells === undefined) states.set(meta.name, (cells = new Map()));
        const mapKey = mapKeyOf(restored.key);
        const list = cells.get(mapKey);
        if (list === undefined) cells.set(mapKey, [restored]);
        else list.push(restored);
      });
    } catch (e) {
      throw checkpointCorrupt(`shared checkpoint file '${file.fileName}', key group ${keyGroup}: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (input.remaining !== 0) throw checkpointCorrupt(`shared checkpoint file '${file.fileName}', key group ${keyGroup}: ${input.remaining} bytes follow the key group`);
  });
  const present = [...states].filter(([, cells]) => cells.size > 0);
  out.varuint(present.length);
  const codec = defaultCodec();
  for (const [name, cells] of present) {
    out.string(name);
    const forEachCell = (_index: number, visit: Parameters<Parameters<typeof writeCells>[0]["forEachCell"]>[1]): void => {
      for (const list of cells.values()) for (const { key, namespace, cell } of list) visit(key, namespace, cell.value, cell.expiresAt, cell.expiry);
    };
    writeCells({ forEachCell }, 0, metaOf(name)!, Number.NEGATIVE_INFINITY, codec, out);
  }
}

/** `materializeKeyGroup` followed by `rest` (the task file's key-group section after its empty state part: the timers), as one reader. */
export function chainKeyGroupReader(files: readonly SnapshotFile[], keyGroup: number, metaOf: (name: string) => KeyedStateMeta | undefined, rest: Uint8Array | undefined): ByteReader {
  const out = new ByteWriter(4096);
  materializeKeyGroup(files, keyGroup, metaOf, out);
  if (rest === undefined) {
    out.varuint(0); // no event-time timers
    out.varuint(0); // no processing-time timers
  } else out.bytes(rest);
  return new ByteReader(out.finish());
}
