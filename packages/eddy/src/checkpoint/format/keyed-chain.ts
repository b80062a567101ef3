/**
 * The shared files of incremental checkpoints (state/incremental-snapshot.ts) and how a key group
 * is read back from a chain of them. A shared file is a container file (container.ts: CRC-32 per
 * section and over the file; the manifest's FileRef adds size and SHA-256) of kind
 * `keyed-base-2` or `keyed-delta-2`, with per key group a section `keyed` (its state) and a
 * section `timers` (its timers, timers.ts), each only when the group has something for it.
 * Version 1 (`keyed-base`, `keyed-delta`; read, no longer written) had the `keyed` sections only:
 * its timers are in the task files. A chain is of one version; an Eddy that does not know a kind
 * refuses the file (an Eddy before version 2 refuses `keyed-base-2` by its kind, so it never
 * restores such a chain without its timers).
 *
 * Restore turns a chain into the canonical key group (heap-snapshot.ts) — the base's cells, then
 * per delta: drop every changed key, add its cells — so any backend restores it, at any
 * parallelism: key groups are read one by one from whichever chain holds them.
 */
import { ByteReader, ByteWriter } from "../../core/codec/bytes.ts";
import { defaultCodec } from "../../core/codec/default-codec.ts";
import { EddyError } from "../../core/errors.ts";
import { mapKeyOf, type MapKey } from "../../core/key.ts";
import { readKeyGroup, writeCells, type RestoredCell } from "../../state/heap-snapshot.ts";
import { readDeltaHeader } from "../../state/incremental-snapshot.ts";
import type { KeyGroupCells } from "../../state/keyed-state-backend.ts";
import type { KeyedStateMeta } from "../../state/keyed-state-meta.ts";
import { checkpointCorrupt, type SectionSource } from "./container.ts";
import { chainKeyGroupTimers } from "./timers.ts";

/** The kinds written (version 2): state and timers. */
export const SHARED_BASE_KIND = "keyed-base-2";
export const SHARED_DELTA_KIND = "keyed-delta-2";
/** The kinds of version 1 (state only; the timers in the task files): read, never written. */
export const SHARED_BASE_KIND_1 = "keyed-base";
export const SHARED_DELTA_KIND_1 = "keyed-delta";
/** The section name of a key group's state in a shared file. */
export const SHARED_KEYED_SECTION = "keyed";

const VERSION_OF_KIND: Readonly<Record<string, { version: 1 | 2; delta: boolean }>> = {
  [SHARED_BASE_KIND]: { version: 2, delta: false },
  [SHARED_DELTA_KIND]: { version: 2, delta: true },
  [SHARED_BASE_KIND_1]: { version: 1, delta: false },
  [SHARED_DELTA_KIND_1]: { version: 1, delta: true },
};

const isDeltaFile = (file: SectionSource): boolean => VERSION_OF_KIND[file.kind]?.delta === true;

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
    if (isDeltaFile(files[i]!)) {
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

/**
 * Checks the kinds of a chain (one base, then deltas, all of one version) and returns its version:
 * 2 holds the timers (`chainTimers`), 1 leaves them to the task files.
 */
export function checkChain(files: readonly SectionSource[]): 1 | 2 {
  let version: 1 | 2 | undefined;
  files.forEach((file, i) => {
    const kind = VERSION_OF_KIND[file.kind];
    if (kind === undefined) {
      throw new EddyError(
        "CHECKPOINT_UNSUPPORTED",
        `shared checkpoint file '${file.fileName}' is of kind '${file.kind}', which this Eddy does not read (it reads ${SHARED_BASE_KIND} and ${SHARED_DELTA_KIND}, and ${SHARED_BASE_KIND_1} and ${SHARED_DELTA_KIND_1}): restore it with the Eddy that wrote it or a newer one`,
      );
    }
    version ??= kind.version;
    if (kind.delta === (i === 0) || kind.version !== version) {
      const [base, delta] = version === 2 ? [SHARED_BASE_KIND, SHARED_DELTA_KIND] : [SHARED_BASE_KIND_1, SHARED_DELTA_KIND_1];
      throw checkpointCorrupt(`shared checkpoint file '${file.fileName}' is a ${file.kind} at position ${i} of its chain (a chain is one ${base}, then ${delta} files)`);
    }
  });
  return version ?? 2;
}

/**
 * The timers of `keyGroup` in a version 2 chain (timers.ts `chainKeyGroupTimers`), in the
 * layout the task files use; undefined when the chain has none for the group.
 */
export function chainTimers(files: readonly SectionSource[], keyGroup: number): ByteReader | undefined {
  if (checkChain(files) !== 2) throw new EddyError("INTERNAL", "a version 1 chain has no timers: they are in its task files");
  return chainKeyGroupTimers(files, keyGroup, (i) => isDeltaFile(files[i]!), (file, e) => corruptGroup(file, keyGroup, e));
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
      if (isDeltaFile(file)) {
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

/**
 * `materializeKeyGroup` followed by the group's timers, as one reader: a version 2 chain's own
 * (`chainTimers`), or for version 1 `rest`, the task file's key-group section after its empty
 * state part.
 */
export function chainKeyGroupReader(files: readonly SectionSource[], keyGroup: number, metaOf: (name: string) => KeyedStateMeta | undefined, rest: Uint8Array | undefined): ByteReader {
  const out = new ByteWriter(4096);
  materializeKeyGroup(files, keyGroup, metaOf, out);
  const timers = checkChain(files) === 2 ? chainTimers(files, keyGroup) : rest === undefined ? undefined : readerOf(rest);
  if (timers === undefined) {
    out.varuint(0); // no event-time timers
    out.varuint(0); // no processing-time timers
  } else out.bytes(timers.bytes(timers.remaining));
  return new ByteReader(out.finish());
}
