/**
 * The default batch codec (id "eddy.default/3"; it reads "eddy.default/1" and "/2", the same layout
 * without the groups added since): learns record shapes within a batch and encodes
 * each shape column-wise, so a batch of `{ key: 123, value: 4.5 }` costs two Float64Array copies
 * instead of a tagged value per field. Anything irregular falls back to the value codec
 * (value-codec.ts), whose `value` and primitives (varuint, string, align) it reuses.
 *
 * Records are split into groups: one group per shape (plain objects — prototype Object.prototype —
 * with at least one key, no key "__proto__", and the same own enumerable keys in the same order),
 * one for top-level numbers, one for top-level strings, one for arrays, one for maps, and one for
 * everything else.
 *
 *   batch   := varuint groupCount                 0 iff the batch is empty, else 1..256
 *              [ u8 groupIndex × count ]          only if groupCount > 1: record i's group
 *              group × groupCount                 in order of first appearance
 *   group   := u8 kind, then by kind:             m = the group's record count, which is `count`
 *                                                 for a single group, else derived from the index
 *     0 shape    varuint fieldCount (≥ 1), string fieldName × fieldCount (distinct, never
 *                "__proto__"), column × fieldCount
 *     1 numbers  f64Array (m values)
 *     2 strings  strings (m values)
 *     3 values   value × m
 *     4 lists    varuint length × m, then batch   every value an array (Array.prototype) nested in
 *                (every list's elements in order,  at most MAX_LIST_DEPTH lists groups (deeper:
 *                Σ length records)                 the values group). Since 2026-12-05
 *                                                 ("eddy.default/2"): a list state's arrays and a
 *                                                 value that is an array of records are written
 *                                                 column-wise, not value by value (q19's top-10
 *                                                 arrays: a checkpoint's encoding 2.2× faster)
 *     5 maps     varuint size × m, then batch     every value a Map (Map.prototype), nested as
 *                (every map's keys in order,      lists are (they share MAX_LIST_DEPTH). Since
 *                Σ size records), then batch      2026-12-05 ("eddy.default/3"): a map state's
 *                (their values, likewise)         cells column-wise, not entry by entry
 *     6 int32s   i32Array (m values)              the numbers group when every value is an int32
 *                                                 (not −0): half the bytes, decoded as small
 *                                                 integers. Since "eddy.default/3"
 *   column  := u8 columnKind, then by kind:
 *     0 f64      f64Array (m values)              every value a number (incl. −0, NaN)
 *     1 string   strings (m values)               every value a string
 *     2 boolean  u8 × m (0 false, 1 true)         every value a boolean
 *     3 value    value × m                        anything else
 *   4 shape    varuint fieldCount (≥ 1), string fieldName × fieldCount, column × fieldCount
 *                                                 every value a plain object of one shape (as
 *                                                 for groups), nested at most MAX_SHAPE_DEPTH deep
 *   5 i32      i32Array (m values)              every value an int32 (not −0). Decoded integers
 *                                                 are then small integers (Smis) like the ones
 *                                                 user code creates, so decoded and local records
 *                                                 share one hidden class; from a Float64Array
 *                                                 they would be doubles, and V8 would deprecate
 *                                                 the local records' map (measured: 3× slower
 *                                                 keyed stages)
 *   strings := string joined, varuint utf16Length × m
 *              the m strings concatenated, encoded once (UTF-8, or UTF-16 if the concatenation is
 *              not well-formed), then each string's length in UTF-16 code units; decoded in
 *              pieces of ~1 KB and m `slice` calls (see readStrings).
 *
 * Every group costs at least one byte per record, which bounds what a corrupt count can allocate.
 * The decoder rebuilds a shape's records with a generated function whose object literal gives
 * them one hidden class; field names enter generated code only through JSON.stringify.
 *
 * Encoding takes a shortcut for the common batch, whose records all have one shape (that of the
 * last batch's first record, usually): no group index and no copy of the batch; and when the
 * fields are all numbers, a generated pair of loops checks the records and writes each field
 * straight into its column. The bytes are the same as those of the general path.
 */
import { HOST_LITTLE_ENDIAN, type ByteReader, type ByteWriter } from "./bytes.ts";
import { asCorrupt, CodecError, type BatchCodec } from "./codec.ts";
import { isPlainObject } from "../plain-object.ts";
import { compileFunction, mayCompile } from "../codegen.ts";
import { decodeValue, encodeValue, findUnencodable } from "./value-codec.ts";
import { FrozenMap } from "./frozen-map.ts";

const enum GroupKind {
  Shape = 0,
  Numbers = 1,
  Strings = 2,
  Values = 3,
  Lists = 4,
  Maps = 5,
  Int32s = 6,
}

const enum ColumnKind {
  F64 = 0,
  String = 1,
  Boolean = 2,
  Value = 3,
  Shape = 4,
  I32 = 5,
}

/** Groups per batch (the group index is one byte). Records of further shapes join the values group. */
const MAX_GROUPS = 256;
/** Generated extractors/builders kept per codec; further shapes use the generic paths. */
const MAX_CACHED_SHAPES = 256;
/** Shapes of the batch compared key by key before a record's signature is computed. */
const SHAPE_PROBES = 8;
/** Nesting of shape columns; deeper objects (and cycles) go to the value codec. */
const MAX_SHAPE_DEPTH = 8;
/** Nesting of lists groups (arrays of arrays); deeper arrays go to the values group. */
const MAX_LIST_DEPTH = 8;

/**
 * For a shape whose fields may all be numbers: checks that every record has the shape and only
 * numbers in its fields, and sets kinds[f] to I32 or F64 as columnKind would; false if not.
 */
type NumericCheck = (records: readonly unknown[], m: number, kinds: Uint8Array) => boolean;
/** Copies each record's fields into the column views (Int32Array or Float64Array each). */
type NumericFill = (records: readonly unknown[], m: number, columns: readonly (Int32Array | Float64Array)[]) => void;

interface NumericShape {
  readonly check: NumericCheck;
  readonly fill: NumericFill;
  /** Column kinds of the batch being encoded (written by `check`). */
  readonly kinds: Uint8Array;
}

/** A record shape as the encoder remembers it between batches. */
interface KnownShape {
  readonly keys: readonly string[];
  readonly signature: string;
  readonly extract: Extractor | undefined;
  /** Set once a record of this shape had numbers only (and the cache had room). */
  numeric: NumericShape | undefined;
}

/**
 * Reads a shape's fields from records into one array per field, and sets kinds[f] to field f's
 * column kind as columnKind would decide it, or to KIND_UNDECIDED when the column's first value
 * is an object (whether the column is a shape is left to columnKind).
 */
type Extractor = (records: readonly unknown[], m: number, kinds: Uint8Array) => unknown[][];

/** An extractor's kind for a column whose first value is an object: see Extractor. */
const KIND_UNDECIDED = 255;
/** Writes `m` records built from decoded columns into `out[0..m)`. */
type Builder = (m: number, columns: readonly unknown[], out: unknown[]) => void;

/** A group of the batch being encoded. */
interface Group {
  readonly kind: GroupKind;
  readonly id: number;
  /** Shape keys, for kind Shape; empty otherwise. */
  readonly keys: readonly string[];
  readonly extract: Extractor | undefined;
  readonly records: unknown[];
}

export function defaultCodec(): BatchCodec {
  return new DefaultCodec();
}

class DefaultCodec implements BatchCodec {
  readonly id = "eddy.default/3";
  /** Shape signature → generated extractor; at most MAX_CACHED_SHAPES entries. */
  readonly #extractors = new Map<string, Extractor>();
  /** Column kinds + shape signature → generated builder; at most MAX_CACHED_SHAPES entries. */
  readonly #builders = new Map<string, Builder>();
  /** Group index per record of the batch being encoded; grown as needed. */
  #groupIndex = new Uint8Array(2048);
  /** Shape signature → generated numeric encoder; at most MAX_CACHED_SHAPES entries. */
  readonly #numerics = new Map<string, NumericShape>();
  /** Scratch columns for maps of numbers to numbers. */
  readonly #numbers = new NumericEntries();
  /** The shape of the first record of the last batch: batches of a stream mostly share it. */
  #lastShape: KnownShape | undefined = undefined;

  encode(values: readonly unknown[], out: ByteWriter): void {
    try {
      this.#encode(values, out, 0);
    } catch (e) {
      // Diagnose from scratch, in record order, so the error names the first bad record.
      if (!(e instanceof CodecError)) throw e;
      for (let i = 0; i < values.length; i++) {
        const error = findUnencodable(values[i], i);
        if (error !== undefined) throw error;
      }
      throw e;
    }
  }

  decode(input: ByteReader, count: number): unknown[] {
    try {
      return this.#decode(input, count, 0);
    } catch (e) {
      throw asCorrupt(e);
    }
  }

  /** `listDepth`: lists groups this batch is nested in (0: the batch asked for). */
  #encode(values: readonly unknown[], out: ByteWriter, listDepth: number): void {
    const n = values.length;
    if (n === 0) {
      out.varuint(0);
      return;
    }
    // hot path: a batch of records of one shape (the common case) is one group of the records as
    // they are: no group index and no copy of the batch; the bytes are those of the general path.
    const single = this.#candidateShape(values[0]);
    if (single !== undefined) {
      const numeric = single.numeric;
      if (numeric !== undefined && numeric.check(values, n, numeric.kinds)) {
        // hot path: numbers only, written straight from the records into the columns
        this.#writeNumeric(values, n, single.keys, numeric, out);
        return;
      }
      if (allHaveKeys(values, n, single.keys)) {
        out.varuint(1);
        out.u8(GroupKind.Shape);
        this.#writeShape(values, n, single.keys, single.extract, out, 0);
        return;
      }
    }
    // hot path: a batch of numbers only (a map state's keys or values, a stream of numbers) is one
    // numbers or int32s group, written straight from the batch; the bytes are the general path's.
    if (typeof values[0] === "number" && writeNumbers(values, n, out)) return;
    if (this.#groupIndex.length < n) this.#groupIndex = new Uint8Array(Math.max(n, this.#groupIndex.length * 2));
    const index = this.#groupIndex;
    const groups: Group[] = [];
    const shapes: Group[] = [];
    const bySignature = new Map<string, Group>();
    let numbers: Group | undefined;
    let strings: Group | undefined;
    let others: Group | undefined;
    let lists: Group | undefined;
    let maps: Group | undefined;
    let last: Group | undefined;

    // hot path: one group per record, by comparing its keys against the last shape's
    for (let i = 0; i < n; i++) {
      const v = values[i];
      let g: Group | undefined;
      if (typeof v === "object" && v !== null) {
        if (Array.isArray(v)) {
          if (listDepth < MAX_LIST_DEPTH && Object.getPrototypeOf(v) === Array.prototype) g = lists ??= newGroup(GroupKind.Lists, groups);
        } else if (v instanceof Map) {
          if (listDepth < MAX_LIST_DEPTH && Object.getPrototypeOf(v) === Map.prototype) g = maps ??= newGroup(GroupKind.Maps, groups);
        } else if (v instanceof FrozenMap) {
          // A snapshot's frozen map state cell: written as the Map it was. Only ever at the top.
          if (listDepth < MAX_LIST_DEPTH) g = maps ??= newGroup(GroupKind.Maps, groups);
        } else if (isPlainObject(v)) {
          if (last !== undefined && hasKeys(v, last.keys)) g = last;
          else {
            for (let s = 0; s < shapes.length && s < SHAPE_PROBES; s++) {
              if (hasKeys(v, (shapes[s] as Group).keys)) {
                g = shapes[s];
                break;
              }
            }
            if (g === undefined) g = this.#shapeGroup(v, groups, shapes, bySignature);
            if (g !== undefined && g.kind === GroupKind.Shape) last = g;
          }
        }
      } else if (typeof v === "number") {
        g = numbers ??= newGroup(GroupKind.Numbers, groups);
      } else if (typeof v === "string") {
        g = strings ??= newGroup(GroupKind.Strings, groups);
      }
      if (g === undefined) g = others ??= newGroup(GroupKind.Values, groups);
      g.records.push(v);
      index[i] = g.id;
    }

    out.varuint(groups.length);
    if (groups.length > 1) out.bytes(index.subarray(0, n));
    for (const g of groups) this.#writeGroup(g, out, listDepth);
  }

  /**
   * The shape of `first` if it has one: the last batch's when it matches (batches of a stream
   * mostly share it), with a numeric encoder once a record of it had numbers only.
   */
  #candidateShape(first: unknown): KnownShape | undefined {
    if (typeof first !== "object" || first === null || Object.getPrototypeOf(first) !== Object.prototype) return undefined;
    let shape = this.#lastShape;
    if (shape === undefined || !hasKeys(first, shape.keys)) {
      const keys = shapeKeys(first);
      if (keys === undefined) return undefined;
      const signature = JSON.stringify(keys);
      shape = { keys, signature, extract: this.#extractor(keys, signature), numeric: this.#numerics.get(signature) };
      this.#lastShape = shape;
    }
    if (shape.numeric === undefined && HOST_LITTLE_ENDIAN && this.#numerics.size < MAX_CACHED_SHAPES && allNumbers(first, shape.keys)) {
      shape.numeric = compileNumeric(shape.keys);
      if (shape.numeric !== undefined) this.#numerics.set(shape.signature, shape.numeric);
    }
    return shape;
  }

  /** Writes a shape group whose columns are all numbers (the bytes #writeShape would write). */
  #writeNumeric(records: readonly unknown[], m: number, keys: readonly string[], numeric: NumericShape, out: ByteWriter): void {
    out.varuint(1);
    out.u8(GroupKind.Shape);
    out.varuint(keys.length);
    for (const key of keys) out.string(key);
    // Room for every column first, so reserving one never moves the others.
    out.ensure(keys.length * (8 + m * 8));
    const kinds = numeric.kinds;
    const columns = new Array<Int32Array | Float64Array>(keys.length);
    for (let f = 0; f < keys.length; f++) {
      const kind = kinds[f]!;
      out.u8(kind);
      columns[f] = kind === ColumnKind.I32 ? out.reserveI32(m) : out.reserveF64(m);
    }
    numeric.fill(records, m, columns);
  }

  /** The group of a plain object whose keys matched no probed shape, or undefined → values. */
  #shapeGroup(v: object, groups: Group[], shapes: Group[], bySignature: Map<string, Group>): Group | undefined {
    const keys = shapeKeys(v);
    if (keys === undefined) return undefined;
    const signature = JSON.stringify(keys);
    const known = bySignature.get(signature);
    if (known !== undefined) return known;
    // Keep slots for the numbers, strings, values, lists and maps groups, which may still be needed.
    if (groups.length >= MAX_GROUPS - 5) return undefined;
    const extract = this.#extractor(keys, signature);
    const g: Group = { kind: GroupKind.Shape, id: groups.length, keys, extract, records: [] };
    groups.push(g);
    shapes.push(g);
    bySignature.set(signature, g);
    return g;
  }

  #writeGroup(g: Group, out: ByteWriter, listDepth: number): void {
    const m = g.records.length;
    if (g.kind === GroupKind.Numbers && allInt32(g.records as number[], m)) {
      // Integers as int32: half the bytes, and decoded as small integers (see column kind i32).
      out.u8(GroupKind.Int32s);
      out.i32Array(g.records as number[], m);
      return;
    }
    out.u8(g.kind);
    switch (g.kind) {
      case GroupKind.Shape: {
        this.#writeShape(g.records, m, g.keys, g.extract, out, 0);
        return;
      }
      case GroupKind.Numbers:
        out.f64Array(g.records as number[], m);
        return;
      case GroupKind.Strings:
        writeStrings(g.records as string[], m, out);
        return;
      case GroupKind.Values:
        for (let i = 0; i < m; i++) encodeValue(g.records[i], out);
        return;
      case GroupKind.Lists: {
        // Each list's length, then every element of every list as one nested batch: a list of
        // records is written column-wise like a batch of them, not value by value.
        const lists = g.records as unknown[][];
        let total = 0;
        for (let i = 0; i < m; i++) {
          const n = lists[i]!.length;
          out.varuint(n);
          total += n;
        }
        const elements = new Array<unknown>(total);
        let at = 0;
        for (let i = 0; i < m; i++) {
          const list = lists[i]!;
          for (let j = 0; j < list.length; j++) elements[at++] = list[j];
        }
        this.#encode(elements, out, listDepth + 1);
        return;
      }
      case GroupKind.Maps: {
        // Each map's size, then all keys as one nested batch and all values as another (a map
        // state's cells: column-wise, not entry by entry through the value codec).
        const maps = g.records as (Map<unknown, unknown> | FrozenMap)[];
        let total = 0;
        for (let i = 0; i < m; i++) {
          const n = maps[i]!.size;
          out.varuint(n);
          total += n;
        }
        if (this.#numbers.write(maps, m, total, out)) return;
        const keys = new Array<unknown>(total);
        const values = new Array<unknown>(total);
        let at = 0;
        for (let i = 0; i < m; i++) {
          const map = maps[i]!;
          if (map instanceof FrozenMap) {
            for (let j = 0; j < map.keys.length; j++) {
              keys[at] = map.keys[j];
              values[at++] = map.values[j];
            }
          } else {
            for (const [k, v] of map) {
              keys[at] = k;
              values[at++] = v;
            }
          }
        }
        this.#encode(keys, out, listDepth + 1);
        this.#encode(values, out, listDepth + 1);
        return;
      }
    }
  }

  #writeShape(
    records: readonly unknown[],
    m: number,
    keys: readonly string[],
    extract: Extractor | undefined,
    out: ByteWriter,
    depth: number,
  ): void {
    out.varuint(keys.length);
    for (const key of keys) out.string(key);
    if (extract === undefined) {
      for (const column of extractGeneric(records, m, keys)) this.#writeColumn(column, m, out, depth, columnKind(column, m, depth));
      return;
    }
    // The extractor decides the kinds while it reads the fields: no second pass over each column.
    const kinds = new Uint8Array(keys.length);
    const columns = extract(records, m, kinds);
    for (let f = 0; f < columns.length; f++) {
      const column = columns[f]!;
      const kind = kinds[f]!;
      this.#writeColumn(column, m, out, depth, kind === KIND_UNDECIDED ? columnKind(column, m, depth) : kind);
    }
  }

  #writeColumn(column: unknown[], m: number, out: ByteWriter, depth: number, kind: ColumnKind): void {
    out.u8(kind);
    switch (kind) {
      case ColumnKind.F64:
        out.f64Array(column as number[], m);
        return;
      case ColumnKind.I32:
        out.i32Array(column as number[], m);
        return;
      case ColumnKind.String:
        writeStrings(column as string[], m, out);
        return;
      case ColumnKind.Boolean:
        out.ensure(m);
        for (let i = 0; i < m; i++) out.u8(column[i] === true ? 1 : 0);
        return;
      case ColumnKind.Value:
        for (let i = 0; i < m; i++) encodeValue(column[i], out);
        return;
      case ColumnKind.Shape: {
        const keys = shapeKeys(column[0] as object) as string[];
        this.#writeShape(column, m, keys, this.#extractor(keys, JSON.stringify(keys)), out, depth + 1);
        return;
      }
    }
  }

  /** The cached generated extractor for a shape, or undefined once the cache is full. */
  #extractor(keys: readonly string[], signature: string): Extractor | undefined {
    let extract = this.#extractors.get(signature);
    if (extract === undefined && this.#extractors.size < MAX_CACHED_SHAPES) {
      extract = compileExtractor(keys);
      if (extract !== undefined) this.#extractors.set(signature, extract);
    }
    return extract;
  }

  #decode(input: ByteReader, count: number, listDepth: number): unknown[] {
    const groupCount = input.varuint();
    if (count === 0) {
      if (groupCount !== 0) throw CodecError.corrupt(`${groupCount} groups in an empty batch`);
      return [];
    }
    if (groupCount === 0 || groupCount > MAX_GROUPS || groupCount > count) {
      throw CodecError.corrupt(`${groupCount} groups for ${count} records`);
    }
    input.checkCount(count, 1, "records");
    if (groupCount === 1) {
      const values = new Array<unknown>(count);
      this.#readGroup(input, count, values, listDepth);
      return values;
    }
    const index = input.bytes(count);
    const sizes = new Int32Array(groupCount);
    for (let i = 0; i < count; i++) {
      const g = index[i] as number;
      if (g >= groupCount) throw CodecError.corrupt(`record ${i} in group ${g} of ${groupCount}`);
      (sizes[g] as number)++;
    }
    const parts: unknown[][] = [];
    for (let g = 0; g < groupCount; g++) {
      const m = sizes[g] as number;
      if (m === 0) throw CodecError.corrupt(`group ${g} has no records`);
      const part = new Array<unknown>(m);
      this.#readGroup(input, m, part, listDepth);
      parts.push(part);
    }
    // Interleave the groups back into record order.
    const values = new Array<unknown>(count);
    const cursors = sizes.fill(0);
    for (let i = 0; i < count; i++) {
      const g = index[i] as number;
      values[i] = (parts[g] as unknown[])[(cursors[g] as number)++];
    }
    return values;
  }

  /**
   * A nested batch of `count` values, as #decode reads it, but a batch of one numbers or int32s
   * group is returned as the typed array it was read into, not copied into an array.
   */
  #decodeColumn(input: ByteReader, count: number, listDepth: number): ArrayLike<unknown> {
    if (count === 0 || input.remaining < 2 || input.peekU8(0) !== 1) return this.#decode(input, count, listDepth);
    const kind = input.peekU8(1);
    if (kind !== GroupKind.Int32s && kind !== GroupKind.Numbers) return this.#decode(input, count, listDepth);
    input.skip(2);
    return kind === GroupKind.Int32s ? input.i32Array(count) : input.f64Array(count);
  }

  #readGroup(input: ByteReader, m: number, out: unknown[], listDepth: number): void {
    const kind = input.u8();
    switch (kind) {
      case GroupKind.Shape:
        this.#readShape(input, m, out, 0);
        return;
      case GroupKind.Numbers: {
        const numbers = input.f64Array(m);
        for (let i = 0; i < m; i++) out[i] = numbers[i];
        return;
      }
      case GroupKind.Int32s: {
        const numbers = input.i32Array(m);
        for (let i = 0; i < m; i++) out[i] = numbers[i];
        return;
      }
      case GroupKind.Strings: {
        const strings = readStrings(input, m);
        for (let i = 0; i < m; i++) out[i] = strings[i];
        return;
      }
      case GroupKind.Values:
        input.checkCount(m, 1, "values");
        for (let i = 0; i < m; i++) out[i] = decodeValue(input);
        return;
      case GroupKind.Lists: {
        const [lengths, total] = readSizes(input, m, listDepth, "list");
        const elements = this.#decode(input, total, listDepth + 1);
        let at = 0;
        for (let i = 0; i < m; i++) {
          const n = lengths[i]!;
          const list = new Array<unknown>(n);
          for (let j = 0; j < n; j++) list[j] = elements[at++];
          out[i] = list;
        }
        return;
      }
      case GroupKind.Maps: {
        const [sizes, total] = readSizes(input, m, listDepth, "map");
        // Every entry costs at least a byte of the values' batch too.
        input.checkCount(total, 2, "map entries");
        const keys = this.#decodeColumn(input, total, listDepth + 1);
        const values = this.#decodeColumn(input, total, listDepth + 1);
        let at = 0;
        for (let i = 0; i < m; i++) {
          const map = new Map<unknown, unknown>();
          for (let j = sizes[i]!; j > 0; j--, at++) map.set(keys[at], values[at]);
          out[i] = map;
        }
        return;
      }
    }
    throw CodecError.corrupt(`unknown group kind ${kind}`);
  }

  #readShape(input: ByteReader, m: number, out: unknown[], depth: number): void {
    const fieldCount = input.varuint();
    if (fieldCount === 0) throw CodecError.corrupt("shape without fields");
    input.checkCount(fieldCount, 2, "fields");
    const names: string[] = [];
    for (let f = 0; f < fieldCount; f++) names.push(input.string());
    if (new Set(names).size !== fieldCount || names.includes("__proto__")) {
      throw CodecError.corrupt(`invalid shape ${JSON.stringify(names)}`);
    }
    const columns: unknown[] = [];
    let kinds = "";
    for (let f = 0; f < fieldCount; f++) {
      const kind = input.u8();
      columns.push(this.#readColumn(input, kind, m, depth));
      kinds += kind;
    }
    const key = kinds + JSON.stringify(names);
    let build = this.#builders.get(key);
    if (build === undefined && this.#builders.size < MAX_CACHED_SHAPES) {
      build = compileBuilder(names, kinds);
      if (build !== undefined) this.#builders.set(key, build);
    }
    if (build !== undefined) build(m, columns, out);
    else buildGeneric(m, names, kinds, columns, out);
  }

  #readColumn(input: ByteReader, kind: number, m: number, depth: number): unknown {
    switch (kind) {
      case ColumnKind.F64:
        return input.f64Array(m);
      case ColumnKind.I32:
        return input.i32Array(m);
      case ColumnKind.String:
        return readStrings(input, m);
      case ColumnKind.Boolean:
        return input.bytes(m);
      case ColumnKind.Value: {
        input.checkCount(m, 1, "values");
        const column = new Array<unknown>(m);
        for (let i = 0; i < m; i++) column[i] = decodeValue(input);
        return column;
      }
      case ColumnKind.Shape: {
        if (depth >= MAX_SHAPE_DEPTH) throw CodecError.corrupt(`shape columns nested deeper than ${MAX_SHAPE_DEPTH}`);
        const column = new Array<unknown>(m);
        this.#readShape(input, m, column, depth + 1);
        return column;
      }
    }
    throw CodecError.corrupt(`unknown column kind ${kind}`);
  }
}

/**
 * The sizes of a lists or maps group of `m` records nested `listDepth` deep, and their sum;
 * throws on nesting past MAX_LIST_DEPTH and on more elements than bytes left (every element
 * costs at least a byte of the nested batch).
 */
function readSizes(input: ByteReader, m: number, listDepth: number, what: "list" | "map"): [number[], number] {
  if (listDepth >= MAX_LIST_DEPTH) throw CodecError.corrupt(`${what}s nested deeper than ${MAX_LIST_DEPTH}`);
  input.checkCount(m, 1, `${what}s`);
  const sizes = new Array<number>(m);
  let total = 0;
  for (let i = 0; i < m; i++) total += sizes[i] = input.varuint();
  input.checkCount(total, 1, what === "list" ? "list elements" : "map entries");
  return [sizes, total];
}

/** Entries above which NumericEntries does not keep its columns between batches. */
const MAX_KEPT_ENTRIES = 1 << 20;

/**
 * The keys and values of a batch of maps read into two Float64Arrays kept between batches: a
 * map state's cells of numbers to numbers (q16's bidders → price bands) are written without
 * arrays of boxed values in between. Measured on 449,000 int → int entries: 39-41 → 23 ns per
 * entry (entry by entry through the value codec: 54-67).
 */
class NumericEntries {
  #keys = new Float64Array(0);
  #values = new Float64Array(0);

  /**
   * Writes the keys' batch and the values' batch of `maps` (`total` entries) if every key and
   * value is a number — the bytes the general path writes; false, writing nothing, otherwise.
   */
  write(maps: readonly (Map<unknown, unknown> | FrozenMap)[], m: number, total: number, out: ByteWriter): boolean {
    let keys = this.#keys;
    let values = this.#values;
    if (keys.length < total) {
      keys = new Float64Array(Math.max(total, 2 * keys.length));
      values = new Float64Array(keys.length);
      if (keys.length <= MAX_KEPT_ENTRIES) {
        this.#keys = keys;
        this.#values = values;
      }
    }
    let intKeys = true;
    let intValues = true;
    let at = 0;
    // The two loops are written out: one per-entry callback for both (a Map's or a FrozenMap's
    // entries) measured 30-39 ns per entry against 21-25.
    for (let i = 0; i < m; i++) {
      const map = maps[i]!;
      if (map instanceof FrozenMap) {
        for (let j = 0; j < map.keys.length; j++) {
          const k = map.keys[j];
          const v = map.values[j];
          if (typeof k !== "number" || typeof v !== "number") return false;
          if (intKeys && !isInt32(k)) intKeys = false;
          if (intValues && !isInt32(v)) intValues = false;
          keys[at] = k;
          values[at++] = v;
        }
        continue;
      }
      for (const [k, v] of map) {
        if (typeof k !== "number" || typeof v !== "number") return false;
        if (intKeys && !isInt32(k)) intKeys = false;
        if (intValues && !isInt32(v)) intValues = false;
        keys[at] = k;
        values[at++] = v;
      }
    }
    writeNumberColumn(keys, total, intKeys, out);
    writeNumberColumn(values, total, intValues, out);
    return true;
  }
}

/** A batch of `n` numbers as one int32s (`int32`) or numbers group. */
function writeNumberColumn(numbers: ArrayLike<number>, n: number, int32: boolean, out: ByteWriter): void {
  if (n === 0) {
    out.varuint(0);
    return;
  }
  out.varuint(1);
  if (int32) {
    out.u8(GroupKind.Int32s);
    out.i32Array(numbers, n);
  } else {
    out.u8(GroupKind.Numbers);
    out.f64Array(numbers, n);
  }
}

/**
 * Writes `values` as a batch of one numbers group (int32s when every value is an int32) if every
 * value is a number; false, writing nothing, otherwise.
 */
function writeNumbers(values: readonly unknown[], n: number, out: ByteWriter): boolean {
  let int32 = true;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (typeof v !== "number") return false;
    if (int32 && !isInt32(v)) int32 = false;
  }
  writeNumberColumn(values as number[], n, int32, out);
  return true;
}

/** Whether `v` is an int32 other than −0: what i32Array keeps exactly. */
function isInt32(v: number): boolean {
  return (v | 0) === v && (v !== 0 || 1 / v > 0);
}

/** Whether every one of the first `m` numbers isInt32. */
function allInt32(values: readonly number[], m: number): boolean {
  for (let i = 0; i < m; i++) if (!isInt32(values[i]!)) return false;
  return true;
}

function newGroup(kind: GroupKind, groups: Group[]): Group {
  const g: Group = { kind, id: groups.length, keys: [], extract: undefined, records: [] };
  groups.push(g);
  return g;
}

/** The keys of a plain object that can form a shape (≥ 1 key, none "__proto__"), else undefined. */
function shapeKeys(v: object): string[] | undefined {
  const keys: string[] = [];
  for (const k in v) {
    if (k === "__proto__") return undefined;
    keys.push(k);
  }
  return keys.length === 0 ? undefined : keys;
}

/** Whether `v`'s enumerable keys are exactly `keys`, in order. */
function hasKeys(v: object, keys: readonly string[]): boolean {
  let j = 0;
  for (const k in v) {
    if (k !== keys[j]) return false;
    j++;
  }
  return j === keys.length;
}

/** Whether the first `n` values are plain objects with exactly `keys`, in order. */
function allHaveKeys(values: readonly unknown[], n: number, keys: readonly string[]): boolean {
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (typeof v !== "object" || v === null || !isPlainObject(v) || !hasKeys(v, keys)) return false;
  }
  return true;
}

/** Whether every field of `v` named in `keys` is a number. */
function allNumbers(v: object, keys: readonly string[]): boolean {
  for (const key of keys) if (typeof (v as Record<string, unknown>)[key] !== "number") return false;
  return true;
}

/** The numeric encoder of a shape; undefined where the process forbids compiling code (core/codegen.ts). */
function compileNumeric(keys: readonly string[]): NumericShape | undefined {
  if (!mayCompile()) return undefined;
  const names = keys.map((key) => JSON.stringify(key));
  // The fields are read before the prototype is checked: the reads leave TurboFan knowing the
  // record's hidden class, and then it folds getPrototypeOf into a constant instead of calling it
  // (measured: ~9 ns per record in this loop otherwise, more than the rest of the check). A record
  // that is not a plain object has its fields read before it is turned away; getters run once.
  const checkBody = `"use strict";
${keys.map((_, f) => `let k${f} = ${ColumnKind.I32};`).join(" ")}
for (let i = 0; i < m; i++) {
  const r = records[i];
  if (typeof r !== "object" || r === null) return false;
${names.map((name, f) => `  const v${f} = r[${name}];`).join("\n")}
  if (getPrototypeOf(r) !== objectPrototype) return false;
  let j = 0;
  for (const k in r) {
    switch (j) {
${names.map((name, f) => `      case ${f}: if (k !== ${name}) return false; break;`).join("\n")}
      default: return false;
    }
    j++;
  }
  if (j !== ${keys.length}) return false;
${names
  .map(
    (name, f) => `  if (typeof v${f} !== "number") return false;
  if (k${f} === ${ColumnKind.I32} && ((v${f} | 0) !== v${f} || (v${f} === 0 && 1 / v${f} < 0))) k${f} = ${ColumnKind.F64};`,
  )
  .join("\n")}
}
${keys.map((_, f) => `kinds[${f}] = k${f};`).join(" ")}
return true;`;
  const check = compileFunction<(getPrototypeOf: typeof Object.getPrototypeOf, objectPrototype: object) => NumericCheck>(
    ["getPrototypeOf", "objectPrototype"],
    `return (records, m, kinds) => {${checkBody}};`,
  )?.(Object.getPrototypeOf, Object.prototype);
  const fillBody = `"use strict";
const ${keys.map((_, f) => `c${f} = columns[${f}]`).join(", ")};
for (let i = 0; i < m; i++) { const r = records[i]; ${names.map((name, f) => `c${f}[i] = r[${name}];`).join(" ")} }`;
  const fill = compileFunction<NumericFill>(["records", "m", "columns"], fillBody);
  if (check === undefined || fill === undefined) return undefined;
  return { check, fill, kinds: new Uint8Array(keys.length) };
}

/**
 * A shape's extractor; undefined where the process forbids compiling code (core/codegen.ts).
 * Per field it keeps a mask of what it saw (bit 0: a non-number, 1: a number that is not an int32
 * or is −0, 2: a non-string, 3: a non-boolean), from which the column's kind follows as in
 * columnKind, given the type of the column's first value.
 */
function compileExtractor(keys: readonly string[]): Extractor | undefined {
  if (!mayCompile()) return undefined;
  const decl = keys.map((_, j) => `c${j} = new Array(m)`).join(", ");
  const masks = keys.map((_, j) => `s${j} = 0`).join(", ");
  const reads = keys
    .map(
      (key, j) => `const v${j} = r[${JSON.stringify(key)}]; c${j}[i] = v${j};
    if (typeof v${j} === "number") { if ((v${j} | 0) !== v${j} || (v${j} === 0 && 1 / v${j} < 0)) s${j} |= 14; else s${j} |= 12; }
    else if (typeof v${j} === "string") s${j} |= 9;
    else if (typeof v${j} === "boolean") s${j} |= 5;
    else s${j} |= 13;`,
    )
    .join("\n    ");
  const decide = keys.map((_, j) => `kinds[${j}] = kindOf(c${j}[0], s${j});`).join(" ");
  const list = keys.map((_, j) => `c${j}`).join(", ");
  const body = `"use strict";
const ${decl};
let ${masks};
for (let i = 0; i < m; i++) {
    const r = records[i];
    ${reads}
}
${decide}
return [${list}];`;
  return compileFunction<(kindOf: typeof kindFromMask) => Extractor>(["kindOf"], `return (records, m, kinds) => {${body}};`)?.(kindFromMask);
}

/** A column's kind from its first value and the mask an extractor kept (see compileExtractor). */
function kindFromMask(first: unknown, mask: number): number {
  switch (typeof first) {
    case "number":
      return (mask & 1) !== 0 ? ColumnKind.Value : (mask & 2) !== 0 ? ColumnKind.F64 : ColumnKind.I32;
    case "string":
      return (mask & 4) !== 0 ? ColumnKind.Value : ColumnKind.String;
    case "boolean":
      return (mask & 8) !== 0 ? ColumnKind.Value : ColumnKind.Boolean;
    case "object":
      return KIND_UNDECIDED;
    default:
      return ColumnKind.Value;
  }
}

function extractGeneric(records: readonly unknown[], m: number, keys: readonly string[]): unknown[][] {
  return keys.map((key) => {
    const column = new Array<unknown>(m);
    for (let i = 0; i < m; i++) column[i] = (records[i] as Record<string, unknown>)[key];
    return column;
  });
}

/** A shape's record builder; undefined where the process forbids compiling code (core/codegen.ts). */
function compileBuilder(names: readonly string[], kinds: string): Builder | undefined {
  if (!mayCompile()) return undefined;
  const decl = names.map((_, f) => `c${f} = columns[${f}]`).join(", ");
  const fields = names
    .map((name, f) => `${JSON.stringify(name)}: ${kinds[f] === String(ColumnKind.Boolean) ? `c${f}[i] === 1` : `c${f}[i]`}`)
    .join(", ");
  const body = `"use strict";
const ${decl};
for (let i = 0; i < m; i++) out[i] = { ${fields} };`;
  return compileFunction<Builder>(["m", "columns", "out"], body);
}

function buildGeneric(m: number, names: readonly string[], kinds: string, columns: readonly unknown[], out: unknown[]): void {
  for (let i = 0; i < m; i++) {
    const o: Record<string, unknown> = {};
    for (let f = 0; f < names.length; f++) {
      const column = columns[f] as ArrayLike<unknown>;
      o[names[f] as string] = kinds[f] === String(ColumnKind.Boolean) ? column[i] === 1 : column[i];
    }
    out[i] = o;
  }
}

function columnKind(column: readonly unknown[], m: number, depth: number): ColumnKind {
  const first = column[0];
  switch (typeof first) {
    case "number": {
      let int32 = true;
      for (let i = 0; i < m; i++) {
        const v = column[i];
        if (typeof v !== "number") return ColumnKind.Value;
        if (int32 && !isInt32(v)) int32 = false;
      }
      return int32 ? ColumnKind.I32 : ColumnKind.F64;
    }
    case "string":
      for (let i = 1; i < m; i++) if (typeof column[i] !== "string") return ColumnKind.Value;
      return ColumnKind.String;
    case "boolean":
      for (let i = 1; i < m; i++) if (typeof column[i] !== "boolean") return ColumnKind.Value;
      return ColumnKind.Boolean;
    case "object": {
      if (depth >= MAX_SHAPE_DEPTH || first === null || Object.getPrototypeOf(first) !== Object.prototype) {
        return ColumnKind.Value;
      }
      const keys = shapeKeys(first);
      if (keys === undefined) return ColumnKind.Value;
      for (let i = 1; i < m; i++) {
        const v = column[i];
        if (typeof v !== "object" || v === null || !isPlainObject(v) || !hasKeys(v, keys)) {
          return ColumnKind.Value;
        }
      }
      return ColumnKind.Shape;
    }
    default:
      return ColumnKind.Value;
  }
}

function writeStrings(strings: readonly string[], m: number, out: ByteWriter): void {
  out.joinedString(strings, m);
  out.stringLengths(strings, m);
}

/** V8 makes a slice of at least this many characters a view into the string it was cut from. */
const SLICED_STRING_MIN_LENGTH = 13;
/** The most characters a decoded string can keep alive beyond its own (see readStrings). */
const STRING_PIN_CHARS = 1024;
/** Reused for a column's string ends (grown on demand). */
let stringEnds = new Int32Array(1024);

/**
 * A column of strings, cut into its values. A plain slice of 13+ characters is a view that keeps
 * the string it was cut from alive, so one value kept in state would hold on to its batch's whole
 * column (measured: 2,000 kept 100-character strings held 203 MB instead of 4 MB). So the values
 * are cut from pieces of about STRING_PIN_CHARS characters (consecutive values; a longer value is
 * a piece of its own): a kept value holds at most its own piece alive. Copying every value
 * instead cost ~60 ns per string and halved the codec's throughput on bid-like records.
 *
 * An all-ASCII column (the common case: its characters are its bytes) has each piece decoded
 * straight from the bytes. Any other column is decoded whole, and its pieces are flattened copies
 * of it (append a character, slice it off), which allocates the characters twice (measured on a
 * column of 1,024 URLs: 32 ns per value that way, 19 ns from the bytes).
 */
function readStrings(input: ByteReader, m: number): string[] {
  // An ASCII column stays bytes (cut by cutAscii); any other is decoded whole (cut by cutDecoded).
  const column: Uint8Array | string = input.asciiStringBytes() ?? input.string();
  input.checkCount(m, 1, "string lengths");
  if (stringEnds.length < m) stringEnds = new Int32Array(Math.max(m, stringEnds.length * 2));
  const ends = stringEnds;
  let at = 0;
  for (let i = 0; i < m; i++) {
    at += input.varuint();
    if (at > column.length) throw CodecError.corrupt("string lengths exceed their column");
    ends[i] = at;
  }
  if (at !== column.length) throw CodecError.corrupt("string lengths fall short of their column");
  return typeof column === "string" ? cutDecoded(column, ends, m) : cutAscii(Buffer.from(column.buffer, column.byteOffset, column.length), ends, m);
}

/** Where the piece that starts with value `i` (at character `at`) ends: see readStrings. */
function pieceEnd(ends: Int32Array, i: number, m: number, at: number): number {
  let end = ends[i]!;
  for (let j = i + 1; j < m && ends[j]! - at <= STRING_PIN_CHARS; j++) end = ends[j]!;
  return end;
}

/** The values of an ASCII column, each cut from a piece decoded from `bytes`. */
function cutAscii(bytes: Buffer, ends: Int32Array, m: number): string[] {
  const strings = new Array<string>(m);
  let piece = "";
  let pieceStart = 0;
  let pieceStop = 0;
  let at = 0;
  for (let i = 0; i < m; i++) {
    const end = ends[i]!;
    if (end > pieceStop) {
      pieceStart = at;
      pieceStop = pieceEnd(ends, i, m, at);
      piece = bytes.toString("latin1", pieceStart, pieceStop);
    }
    strings[i] = piece.slice(at - pieceStart, end - pieceStart);
    at = end;
  }
  return strings;
}

/** The values of a column decoded whole into `text`: short ones sliced, long ones cut from flattened pieces. */
function cutDecoded(text: string, ends: Int32Array, m: number): string[] {
  const strings = new Array<string>(m);
  const whole = text.length <= STRING_PIN_CHARS;
  let piece = text;
  let pieceStart = 0;
  let pieceStop = whole ? text.length : 0;
  let at = 0;
  for (let i = 0; i < m; i++) {
    const end = ends[i]!;
    if (end - at < SLICED_STRING_MIN_LENGTH) {
      strings[i] = text.slice(at, end);
    } else {
      if (end > pieceStop) {
        pieceStart = at;
        pieceStop = pieceEnd(ends, i, m, at);
        piece = (text.slice(pieceStart, pieceStop) + "\0").slice(0, -1);
      }
      strings[i] = piece.slice(at - pieceStart, end - pieceStart);
    }
    at = end;
  }
  return strings;
}
