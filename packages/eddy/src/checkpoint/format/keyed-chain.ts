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
import type { KeyGroupCells } from "../../state/keyed-state-backend.ts";
import type { KeyedStateMeta } from "../../state/keyed-state-meta.ts";
import { checkpointCorrupt, type SectionSource } from "./container.ts";

export const SHARED_BASE_KIND = "keyed-base";
export const SHARED_DELTA_KIND = "keyed-delta";
/** The section name of a key group in a shared file. */
export const SHARED_KEYED_SECTION = "keyed";

/**
 * Writes the canonical state part of `keyGroup` as the chain `files` (a base, then deltas, all
 * parsed and of the right kinds) holds it. `metaOf` describes every state the chain may hold.
 */
export function materializeKeyGroup(files: readonly SectionSource[], keyGroup: number, metaOf: (name: string) => KeyedStateMeta | undefined, out: ByteWriter): void {
  const present = [...collectKeyGroup(files, keyGroup, metaOf)].filter(([, cells]) => cells.size > 0);
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

/**
 * The cells of `keyGroup` as the chain `files` holds them, each decoded once and never
 * re-encoded (a backend restores them with `restoreKeyGroupCells`); undefined when no file of
 * the chain has the group. Decoded as the backend takes them, file by file, with nothing
 * gathered per key: the deltas' headers (their changed keys) are read first, and a file's cell
 * is given only if no later delta changed its key (a changed key's cells are all in the last
 * delta that changed it; a key removed there has none).
 */
export function chainKeyGroupCells(files: readonly SectionSource[], keyGroup: number, metaOf: (name: string) => KeyedStateMeta | undefined): KeyGroupCells | undefined {
  checkChain(files);
  const sections = files.map((file) => file.section(SHARED_KEYED_SECTION, keyGroup)); // each CRC checked once
  if (sections.every((bytes) => bytes === undefined)) return undefined;
  // Per state, the last file of the chain whose delta changed each key: the key's cells are that file's.
  const lastChange = new Map<string, Map<MapKey, number>>();
  const inputs = sections.map((bytes, i) => {
    if (bytes === undefined) return undefined;
    const input = readerOf(bytes);
    if (files[i]!.kind === SHARED_DELTA_KIND) {
      try {
        for (const [name, keys] of readDeltaHeader(input)) {
          let changed = lastChange.get(name);
          if (changed === undefined) lastChange.set(name, (changed = new Map()));
          for (const key of keys) changed.set(mapKeyOf(key), i);
        }
      } catch (e) {
        throw corruptGroup(files[i]!, keyGroup, e);
      }
    }
    return input;
  });
  return (onCell) => {
    inputs.forEach((input, i) => {
      if (input === undefined) return;
      const file = files[i]!;
      let failed: { error: unknown } | undefined;
      try {
        readKeyGroup(input, metaOf, (meta, restored) => {
          const changed = lastChange.get(meta.name);
          // A key a later delta changed: its cells are that delta's (none if it was removed).
          if (changed !== undefined) {
            const last = changed.get(mapKeyOf(restored.key));
            if (last !== undefined && last !== i) return;
          }
          try {
            onCell(meta, restored);
          } catch (e) {
            failed = { error: e };
            throw e;
          }
        });
      } catch (e) {
        if (failed !== undefined) throw failed.error; // the backend's, not the file's
        throw corruptGroup(file, keyGroup, e);
      }
      if (input.remaining !== 0) throw corruptGroup(file, keyGroup, `${input.remaining} bytes follow the key group`);
    });
  };
}

function checkChain(files: readonly SectionSource[]): void {
  files.forEach((file, i) => {
    const isDelta = file.kind === SHARED_DELTA_KIND;
    if (isDelta === (i === 0) || (!isDelta && file.kind !== SHARED_BASE_KIND)) {
      throw checkpointCorrupt(`shared checkpoint file '${file.fileName}' is a ${file.kind} at position ${i} of its chain (a chain is one ${SHARED_BASE_KIND}, then ${SHARED_DELTA_KIND} files)`);
    }
  });
}

function readerOf(bytes: Uint8Array): ByteReader {
  return new ByteReader(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
}

function corruptGroup(file: SectionSource, keyGroup: number, e: unknown): Error {
  return checkpointCorrupt(`shared checkpoint file '${file.fileName}', key group ${keyGroup}: ${e instanceof Error ? e.message : String(e)}`);
}

/** Per state name, per key: the cells of `keyGroup` after the base and every delta of the chain. */
function collectKeyGroup(files: readonly SectionSource[], keyGroup: number, metaOf: (name: string) => KeyedStateMeta | undefined): Map<string, Map<MapKey, RestoredCell[]>> {
  checkChain(files);
  return collectSections(files, files.map((file) => file.section(SHARED_KEYED_SECTION, keyGroup)), keyGroup, metaOf);
}

/** collectKeyGroup over the chain's sections of the group (`sections[i]` of `files[i]`, undefined: none). */
function collectSections(
  files: readonly SectionSource[],
  sections: readonly (Uint8Array | undefined)[],
  keyGroup: number,
  metaOf: (name: string) => KeyedStateMeta | undefined,
): Map<string, Map<MapKey, RestoredCell[]>> {
  const states = new Map<string, Map<MapKey, RestoredCell[]>>();
  for (let i = 0; i < files.length; i++) {
    const file = files[i]!;
    const bytes = sections[i];
    if (bytes === undefined) continue;
    const input = readerOf(bytes);
    try {
      if (file.kind === SHARED_DELTA_KIND) {
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
      throw corruptGroup(file, keyGroup, e);
    }
    if (input.remaining !== 0) throw corruptGroup(file, keyGroup, `${input.remaining} bytes follow the key group`);
  }
  return states;
}

/** `materializeKeyGroup` followed by `rest` (the task file's key-group section after its empty state part: the timers), as one reader. */
export function chainKeyGroupReader(files: readonly SectionSource[], keyGroup: number, metaOf: (name: string) => KeyedStateMeta | undefined, rest: Uint8Array | undefined): ByteReader {
  const out = new ByteWriter(4096);
  materializeKeyGroup(files, keyGroup, metaOf, out);
  if (rest === undefined) {
    out.varuint(0); // no event-time timers
    out.varuint(0); // no processing-time timers
  } else out.bytes(rest);
  return new ByteReader(out.finish());
}
