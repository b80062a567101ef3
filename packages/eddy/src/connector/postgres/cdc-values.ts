/**
 * How the CDC source turns PostgreSQL's text form of a value (what pgoutput sends, and what the
 * snapshot reads: both paths go through here, so a row looks the same whether it came from the
 * snapshot or the stream) into a JavaScript value, by the column's type OID:
 *
 * | PostgreSQL | JavaScript |
 * | --- | --- |
 * | smallint, integer, real, double precision, oid | number (NaN/Infinity as such) |
 * | bigint | bigint |
 * | numeric | string (exact), or bigint with `numeric: "bigint"` (a fraction is a bad record) |
 * | boolean | boolean |
 * | timestamp, timestamptz | epoch milliseconds (timestamp without time zone read as UTC) |
 * | date | epoch milliseconds of UTC midnight |
 * | json, jsonb | the parsed value |
 * | bytea | Uint8Array |
 * | arrays of the above | arrays (nested for multi-dimensional), NULL elements as null |
 * | anything else (text, varchar, uuid, time, interval, enums, ...) | string, as PostgreSQL prints it |
 */

export type NumericMode = "string" | "bigint";

const INT2 = 21, INT4 = 23, INT8 = 20, OID = 26, FLOAT4 = 700, FLOAT8 = 701, NUMERIC = 1700, BOOL = 16;
const TIMESTAMP = 1114, TIMESTAMPTZ = 1184, DATE = 1082, JSON_ = 114, JSONB = 3802, BYTEA = 17;

/** Array type OID → element type OID (the built-in ones). */
const ARRAY_ELEMENT = new Map<number, number>([
  [1005, INT2], [1007, INT4], [1016, INT8], [1028, OID], [1021, FLOAT4], [1022, FLOAT8], [1231, NUMERIC], [1000, BOOL],
  [1115, TIMESTAMP], [1185, TIMESTAMPTZ], [1182, DATE], [199, JSON_], [3807, JSONB], [1001, BYTEA],
  [1009, 25], [1015, 1043], [1014, 1042], [2951, 2950], [1183, 1083], [1187, 1186],
]);

export type ValueParser = (text: string) => unknown;

function float(text: string): number {
  if (text === "NaN") return Number.NaN;
  if (text === "Infinity") return Number.POSITIVE_INFINITY;
  if (text === "-Infinity") return Number.NEGATIVE_INFINITY;
  const n = Number(text);
  if (Number.isNaN(n)) throw new Error(`not a number: ${JSON.stringify(text)}`);
  return n;
}

function integer(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new Error(`not an integer: ${JSON.stringify(text)}`);
  return n;
}

function timestamp(text: string, withZone: boolean): number {
  if (text === "infinity") return Number.POSITIVE_INFINITY;
  if (text === "-infinity") return Number.NEGATIVE_INFINITY;
  // ISO output (DateStyle ISO, set on every connection of the source): 2026-12-02 13:51:37.123456+00
  const m = /^(\d{4,})-(\d\d)-(\d\d)(?: (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?)?(?:([+-])(\d\d)(?::?(\d\d))?(?::(\d\d))?)?( BC)?$/.exec(text);
  if (m === null) throw new Error(`not a timestamp: ${JSON.stringify(text)}`);
  if (m[12] !== undefined) throw new Error(`a BC timestamp is not supported: ${JSON.stringify(text)}`);
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0), Number((m[7] ?? "0").padEnd(6, "0").slice(0, 3)));
  if (!withZone || m[8] === undefined) return ms;
  const offsetMs = (Number(m[9]) * 3600 + Number(m[10] ?? 0) * 60 + Number(m[11] ?? 0)) * 1000;
  return m[8] === "+" ? ms - offsetMs : ms + offsetMs;
}

function bytea(text: string): Uint8Array {
  if (!text.startsWith("\\x")) throw new Error("bytea not in hex output (bytea_output = hex is set on every connection of the source)");
  return new Uint8Array(Buffer.from(text.slice(2), "hex"));
}

function numericBigint(text: string): bigint {
  if (!/^-?\d+$/.test(text)) throw new Error(`numeric ${text} is not an integer (the source reads numeric as bigint)`);
  return BigInt(text);
}

/**
 * An array literal ({1,2,NULL}, {"a b","c\"d"}, {{1,2},{3,4}}) as nested arrays of element texts
 * parsed by `element`. Delimiter ',' (every built-in type but box).
 */
export function parseArray(text: string, element: ValueParser): unknown[] {
  let i = 0;
  // A dimension decoration ([0:2]={...}) is skipped.
  if (text[0] === "[") {
    i = text.indexOf("=") + 1;
  }
  const parse = (): unknown[] => {
    if (text[i] !== "{") throw new Error(`not an array literal at ${i}: ${JSON.stringify(text.slice(0, 80))}`);
    i++;
    const out: unknown[] = [];
    if (text[i] === "}") {
      i++;
      return out;
    }
    for (;;) {
      if (text[i] === "{") out.push(parse());
      else if (text[i] === '"') {
        i++;
        let s = "";
        while (text[i] !== '"') {
          if (i >= text.length) throw new Error("unterminated quoted array element");
          if (text[i] === "\\") i++;
          s += text[i++];
        }
        i++;
        out.push(element(s));
      } else {
        let j = i;
        while (text[j] !== "," && text[j] !== "}" && j < text.length) j++;
        const s = text.slice(i, j);
        i = j;
        out.push(s === "NULL" ? null : element(s));
      }
      if (text[i] === ",") i++;
      else if (text[i] === "}") {
        i++;
        return out;
      } else throw new Error(`bad array literal at ${i}: ${JSON.stringify(text.slice(0, 80))}`);
    }
  };
  return parse();
}

/** The parser of values of type `typeOid`. */
export function valueParser(typeOid: number, numeric: NumericMode): ValueParser {
  switch (typeOid) {
    case INT2:
    case INT4:
    case OID:
      return integer;
    case INT8:
      return (t) => BigInt(t);
    case FLOAT4:
    case FLOAT8:
      return float;
    case NUMERIC:
      return numeric === "bigint" ? numericBigint : (t) => t;
    case BOOL:
      return (t) => t === "t";
    case TIMESTAMP:
      return (t) => timestamp(t, false);
    case TIMESTAMPTZ:
      return (t) => timestamp(t, true);
    case DATE:
      return (t) => timestamp(t, false);
    case JSON_:
    case JSONB:
      return (t) => JSON.parse(t) as unknown;
    case BYTEA:
      return bytea;
  }
  const element = ARRAY_ELEMENT.get(typeOid);
  if (element !== undefined) {
    const parseElement = valueParser(element, numeric);
    return (t) => parseArray(t, parseElement);
  }
  return (t) => t;
}

