/**
 * A tagged binary encoding of one value: the general fallback of the default codec, and (as
 * `valueCodec()`, id "eddy.value/1") a batch codec on its own that encodes record after record.
 * Primitives (varuint, string, …) are those of bytes.ts.
 *
 *   value := u8 tag, then by tag:
 *     0x00 undefined
 *     0x01 null
 *     0x02 false
 *     0x03 true
 *     0x04 int32       i32                     (integers in int32 range, except −0)
 *     0x05 float64     f64                     (every other number: −0, NaN, ±Infinity, …)
 *     0x06 string      string
 *     0x07 bigint      u8 sign (0: ≥ 0, 1: < 0), varuint n, n bytes of |value| little-endian
 *     0x08 Date        f64 time value (NaN for an invalid Date)
 *     0x09 array       varuint length, value × length                 (holes become undefined)
 *     0x0a object      varuint n, (string key, value) × n             (prototype Object.prototype)
 *     0x0b object      varuint n, (string key, value) × n             (prototype null)
 *     0x0c Map         varuint n, (value key, value value) × n        (insertion order)
 *     0x0d Set         varuint n, value × n                           (insertion order)
 *     0x0e typed array u8 kind, varuint byteLength, bytes (elements little-endian); kind:
 *                      0 Uint8Array, 1 Int8Array, 2 Uint8ClampedArray, 3 Int16Array,
 *                      4 Uint16Array, 5 Int32Array, 6 Uint32Array, 7 Float32Array,
 *                      8 Float64Array, 9 BigInt64Array, 10 BigUint64Array, 11 Node Buffer
 *                      (decoded as a Buffer: the Kafka client's keys and values, `fs` reads)
 *
 * Objects carry their own enumerable string keys in `for…in` order (an own property whose value is
 * undefined keeps its key); symbol keys, non-index array properties and extra properties of Maps,
 * Sets, Dates and typed arrays are not carried (as with structured clone). Functions, symbols,
 * instances of any other class, cyclic references and nesting deeper than MAX_DEPTH are refused
 * with a CodecError naming the path. Shared (non-cyclic) references are encoded once per use.
 */
import { ByteWriter, HOST_LITTLE_ENDIAN, type ByteReader } from "./bytes.ts";
import { asCorrupt, CodecError, type BatchCodec } from "./codec.ts";

/** Deepest nesting of containers encoded or decoded, so neither side can overflow the stack. */
export const MAX_DEPTH = 1000;

const enum Tag {
  Undefined = 0x00,
  Null = 0x01,
  False = 0x02,
  True = 0x03,
  Int32 = 0x04,
  Float64 = 0x05,
  String = 0x06,
  BigInt = 0x07,
  Date = 0x08,
  Array = 0x09,
  Object = 0x0a,
  NullProtoObject = 0x0b,
  Map = 0x0c,
  Set = 0x0d,
  TypedArray = 0x0e,
}

type TypedArrayConstructor =
  | Uint8ArrayConstructor
  | Int8ArrayConstructor
  | Uint8ClampedArrayConstructor
  | Int16ArrayConstructor
  | Uint16ArrayConstructor
  | Int32ArrayConstructor
  | Uint32ArrayConstructor
  | Float32ArrayConstructor
  | Float64ArrayConstructor
  | BigInt64ArrayConstructor
  | BigUint64ArrayConstructor;

/** Index = the `kind` byte of tag 0x0e. Append only: the indices are wire format. */
const TYPED_ARRAYS: readonly TypedArrayConstructor[] = [
  Uint8Array,
  Int8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
];
/** Node's Buffer (a Uint8Array subclass): the kind after TYPED_ARRAYS; made with Buffer.from, not its constructor. */
const BUFFER_KIND = TYPED_ARRAYS.length;
const TYPED_ARRAY_KIND = new Map<object, number>([...TYPED_ARRAYS.map((ctor, kind): [object, number] => [ctor.prototype, kind]), [Buffer.prototype, BUFFER_KIND]]);

/**
 * Thrown inside the encoder and caught once per enclosing container, which appends its path
 * segment; the entry point turns it into a CodecError. Keeps path building off the happy path.
 */
class Unencodable {
  /** Path segments, innermost first. */
  readonly segments: string[] = [];
  constructor(readonly problem: string) {}
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function keySegment(key: string): string {
  return IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** Joins segments (innermost first) into `a.b[3]<Map>[0].value`, or `$` for none. */
export function formatPath(segments: readonly string[]): string {
  if (segments.length === 0) return "$";
  let path = "";
  for (let i = segments.length - 1; i >= 0; i--) path += segments[i];
  return path.startsWith(".") ? path.slice(1) : path;
}

function className(proto: object): string {
  try {
    const ctor = (proto as { constructor?: unknown }).constructor;
    const name = typeof ctor === "function" ? ctor.name : "";
    return name === "" ? "an anonymous class" : `class ${name}`;
  } catch {
    return "an unknown class";
  }
}

/**
 * Appends the encoding of `value` to `out`. Throws CodecError "RECORD_NOT_ENCODABLE" with the
 * path of the first field it cannot encode (the writer then holds a partial encoding).
 */
export function encodeValue(value: unknown, out: ByteWriter, recordIndex?: number): void {
  try {
    encodeAny(value, out, []);
  } catch (e) {
    if (e instanceof Unencodable) throw CodecError.notEncodable(formatPath(e.segments), e.problem, recordIndex);
    throw e;
  }
}

/** Returns the CodecError `encodeValue(value)` would throw, or undefined if it encodes. */
export function findUnencodable(value: unknown, recordIndex?: number): CodecError | undefined {
  try {
    encodeValue(value, new ByteWriter(256), recordIndex);
    return undefined;
  } catch (e) {
    if (e instanceof CodecError) return e;
    throw e;
  }
}

/** Reads one value written by `encodeValue`. */
export function decodeValue(input: ByteReader): unknown {
  return decodeAny(input, 0);
}

function encodeAny(v: unknown, out: ByteWriter, ancestors: object[]): void {
  switch (typeof v) {
    case "number":
      if ((v | 0) === v && (v !== 0 || 1 / v > 0)) {
        out.u8(Tag.Int32);
        out.i32(v);
      } else {
        out.u8(Tag.Float64);
        out.f64(v);
      }
      return;
    case "string":
      out.u8(Tag.String);
      out.string(v);
      return;
    case "boolean":
      out.u8(v ? Tag.True : Tag.False);
      return;
    case "undefined":
      out.u8(Tag.Undefined);
      return;
    case "bigint":
      encodeBigInt(v, out);
      return;
    case "object":
      if (v === null) out.u8(Tag.Null);
      else encodeObject(v, out, ancestors);
      return;
    case "function":
      throw new Unencodable("is a function");
    case "symbol":
      throw new Unencodable("is a symbol");
  }
}

function encodeBigInt(v: bigint, out: ByteWriter): void {
  const negative = v < 0n;
  let hex = (negative ? -v : v).toString(16);
  if (v === 0n) hex = "";
  else if (hex.length % 2 === 1) hex = "0" + hex;
  const n = hex.length / 2;
  out.u8(Tag.BigInt);
  out.u8(negative ? 1 : 0);
  out.varuint(n);
  out.ensure(n);
  // little-endian: the last hex pair is the least significant byte
  for (let i = 0; i < n; i++) out.u8(parseInt(hex.slice(hex.length - 2 * i - 2, hex.length - 2 * i), 16));
}

function encodeObject(v: object, out: ByteWriter, ancestors: object[]): void {
  if (ancestors.includes(v)) throw new Unencodable("is a cyclic reference");
  if (ancestors.length >= MAX_DEPTH) throw new Unencodable(`nests deeper than ${MAX_DEPTH} levels`);
  const proto: unknown = Object.getPrototypeOf(v);
  ancestors.push(v);
  if (proto === Object.prototype || proto === null) {
    encodeFields(v as Record<string, unknown>, proto === null ? Tag.NullProtoObject : Tag.Object, out, ancestors);
  } else if (proto === Array.prototype) {
    encodeArray(v as readonly unknown[], out, ancestors);
  } else if (proto === Map.prototype) {
    encodeMap(v as Map<unknown, unknown>, out, ancestors);
  } else if (proto === Set.prototype) {
    encodeSet(v as Set<unknown>, out, ancestors);
  } else if (proto === Date.prototype) {
    out.u8(Tag.Date);
    out.f64((v as Date).getTime());
  } else {
    const kind = TYPED_ARRAY_KIND.get(proto as object);
    if (kind === undefined) {
      throw new Unencodable(
        `is an instance of ${className(proto as object)}; give the stream a codec (DataStream.setCodec) or emit plain objects`,
      );
    }
    encodeTypedArray(v as Uint8Array, kind, out);
  }
  ancestors.pop();
}

function encodeFields(v: Record<string, unknown>, tag: Tag, out: ByteWriter, ancestors: object[]): void {
  let n = 0;
  for (const _ in v) n++;
  out.u8(tag);
  out.varuint(n);
  let key = "";
  try {
    for (key in v) {
      out.string(key);
      encodeAny(v[key], out, ancestors);
    }
  } catch (e) {
    if (e instanceof Unencodable) e.segments.push(keySegment(key));
    throw e;
  }
}

function encodeArray(v: readonly unknown[], out: ByteWriter, ancestors: object[]): void {
  const n = v.length;
  out.u8(Tag.Array);
  out.varuint(n);
  let i = 0;
  try {
    for (; i < n; i++) encodeAny(v[i], out, ancestors);
  } catch (e) {
    if (e instanceof Unencodable) e.segments.push(`[${i}]`);
    throw e;
  }
}

function encodeMap(v: Map<unknown, unknown>, out: ByteWriter, ancestors: object[]): void {
  out.u8(Tag.Map);
  out.varuint(v.size);
  let i = 0;
  let part = "key";
  try {
    for (const [key, value] of v) {
      part = "key";
      encodeAny(key, out, ancestors);
      part = "value";
      encodeAny(value, out, ancestors);
      i++;
    }
  } catch (e) {
    if (e instanceof Unencodable) e.segments.push(`<Map>[${i}].${part}`);
    throw e;
  }
}

function encodeSet(v: Set<unknown>, out: ByteWriter, ancestors: object[]): void {
  out.u8(Tag.Set);
  out.varuint(v.size);
  let i = 0;
  try {
    for (const value of v) {
      encodeAny(value, out, ancestors);
      i++;
    }
  } catch (e) {
    if (e instanceof Unencodable) e.segments.push(`<Set>[${i}]`);
    throw e;
  }
}

function encodeTypedArray(v: Uint8Array, kind: number, out: ByteWriter): void {
  if (!HOST_LITTLE_ENDIAN && v.BYTES_PER_ELEMENT > 1) {
    throw new Unencodable("is a multi-byte typed array, which this big-endian host cannot encode");
  }
  out.u8(Tag.TypedArray);
  out.u8(kind);
  out.varuint(v.byteLength);
  out.bytes(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
}

function decodeAny(input: ByteReader, depth: number): unknown {
  const tag = input.u8();
  switch (tag) {
    case Tag.Undefined:
      return undefined;
    case Tag.Null:
      return null;
    case Tag.False:
      return false;
    case Tag.True:
      return true;
    case Tag.Int32:
      return input.i32();
    case Tag.Float64:
      return input.f64();
    case Tag.String:
      return input.string();
    case Tag.BigInt:
      return decodeBigInt(input);
    case Tag.Date:
      return new Date(input.f64());
  }
  if (depth >= MAX_DEPTH) throw CodecError.corrupt(`nesting deeper than ${MAX_DEPTH} levels`);
  switch (tag) {
    case Tag.Array: {
      const n = input.varuint();
      input.checkCount(n, 1, "array elements");
      const a = new Array<unknown>(n);
      for (let i = 0; i < n; i++) a[i] = decodeAny(input, depth + 1);
      return a;
    }
    case Tag.Object:
    case Tag.NullProtoObject: {
      const n = input.varuint();
      input.checkCount(n, 2, "object fields");
      const o: Record<string, unknown> = tag === Tag.Object ? {} : (Object.create(null) as Record<string, unknown>);
      for (let i = 0; i < n; i++) {
        const key = input.string();
        const value = decodeAny(input, depth + 1);
        // `o.__proto__ = x` would set the prototype; an own property named "__proto__" is data.
        if (key === "__proto__") Object.defineProperty(o, key, { value, writable: true, enumerable: true, configurable: true });
        else o[key] = value;
      }
      return o;
    }
    case Tag.Map: {
      const n = input.varuint();
      input.checkCount(n, 2, "map entries");
      const m = new Map<unknown, unknown>();
      for (let i = 0; i < n; i++) {
        const key = decodeAny(input, depth + 1);
        m.set(key, decodeAny(input, depth + 1));
      }
      return m;
    }
    case Tag.Set: {
      const n = input.varuint();
      input.checkCount(n, 1, "set elements");
      const s = new Set<unknown>();
      for (let i = 0; i < n; i++) s.add(decodeAny(input, depth + 1));
      return s;
    }
    case Tag.TypedArray:
      return decodeTypedArray(input);
  }
  throw CodecError.corrupt(`unknown value tag 0x${tag.toString(16)} at offset ${input.offset - 1}`);
}

function decodeBigInt(input: ByteReader): bigint {
  const sign = input.u8();
  if (sign > 1) throw CodecError.corrupt(`bigint sign byte ${sign}`);
  const bytes = input.bytes(input.varuint());
  let hex = "";
  for (let i = bytes.length - 1; i >= 0; i--) hex += (bytes[i] as number).toString(16).padStart(2, "0");
  const magnitude = hex === "" ? 0n : BigInt("0x" + hex);
  return sign === 1 ? -magnitude : magnitude;
}

function decodeTypedArray(input: ByteReader): unknown {
  const kind = input.u8();
  if (kind === BUFFER_KIND) return Buffer.from(input.bytes(input.varuint())); // a copy, as below
  const ctor = TYPED_ARRAYS[kind];
  if (ctor === undefined) throw CodecError.corrupt(`unknown typed array kind ${kind}`);
  const byteLength = input.varuint();
  if (byteLength % ctor.BYTES_PER_ELEMENT !== 0) throw CodecError.corrupt(`typed array of ${byteLength} bytes`);
  if (!HOST_LITTLE_ENDIAN && ctor.BYTES_PER_ELEMENT > 1) {
    throw CodecError.corrupt("multi-byte typed arrays cannot be decoded on a big-endian host");
  }
  // A copy: the result must neither alias the frame nor need alignment.
  const copy = input.bytes(byteLength).slice();
  return new ctor(copy.buffer, 0, byteLength / ctor.BYTES_PER_ELEMENT);
}

/** A batch codec that writes each record with the value encoding (id "eddy.value/1"). */
export function valueCodec(): BatchCodec {
  return {
    id: "eddy.value/1",
    encode(values, out) {
      for (let i = 0; i < values.length; i++) encodeValue(values[i], out, i);
    },
    decode(input, count) {
      try {
        input.checkCount(count, 1, "records");
        const values = new Array<unknown>(count);
        for (let i = 0; i < count; i++) values[i] = decodeAny(input, 0);
        return values;
      } catch (e) {
        throw asCorrupt(e);
      }
    },
  };
}
