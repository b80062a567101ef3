/**
 * CSV records as csv-stringify writes them with its default options — delimiter ",", quote and
 * escape '"', a "\n" after every record; numbers and bigints as `"" + value`, booleans as "1" or
 * "", dates as their epoch milliseconds, other objects as JSON, null and undefined as nothing; a
 * field is quoted when it holds a quote (doubled), a delimiter, "\n" or "\r" — without
 * csv-stringify's per-call work: its sync API normalizes every option and builds a stringifier
 * for each call, which was ~30 % of Nexmark q10 (one record per call keeps part sizes exact).
 *
 * Used only where the output is the same as csv-stringify's: no csv options given, and columns
 * that are plain property names (csv-stringify reads "a.b" and "a[0]" as paths). A record it does
 * not cover (not an object or array, a function or symbol field) is handed to csv-stringify, so
 * errors are csv-stringify's too. csv-encoder.test.ts compares the two on random records.
 */
import { compileFunction } from "../../core/codegen.ts";

/**
 * The encoder for these columns (names, or `{ key }` objects), or undefined when csv-stringify
 * must do it. `compile` false: the general path only (what a process that forbids compiled code
 * gets; tests compare both with csv-stringify).
 */
export function defaultCsvEncoder(columns: unknown, csvOptions: object | undefined, compile = true): ((record: unknown) => string | undefined) | undefined {
  if (csvOptions !== undefined && Object.keys(csvOptions).length > 0) return undefined;
  let keys: string[] | undefined;
  if (columns !== undefined) {
    if (!Array.isArray(columns)) return undefined;
    keys = [];
    for (const c of columns as unknown[]) {
      const key = typeof c === "string" ? c : c !== null && typeof c === "object" && typeof (c as { key?: unknown }).key === "string" ? (c as { key: string }).key : undefined;
      if (key === undefined || /[.[\]]/.test(key)) return undefined;
      keys.push(key);
    }
  }
  const generic = (record: unknown): string | undefined => {
    if (record === null || typeof record !== "object") return undefined;
    let line = "";
    if (Array.isArray(record)) {
      const n = keys === undefined ? record.length : Math.min(record.length, keys.length);
      for (let i = 0; i < n; i++) {
        const field = csvField(record[i]);
        if (field === undefined) return undefined;
        line = i === 0 ? field : `${line},${field}`;
      }
    } else {
      if (keys === undefined) return undefined;
      const fields = record as Record<string, unknown>;
      for (let i = 0; i < keys.length; i++) {
        const field = csvField(fields[keys[i]!]);
        if (field === undefined) return undefined;
        line = i === 0 ? field : `${line},${field}`;
      }
    }
    return `${line}\n`;
  };
  return (compile && keys !== undefined && keyedEncoder(keys, generic)) || generic;
}

/**
 * The encoder of object records for `keys`, compiled: a property load per column by its name
 * (the generic path's `record[keys[i]]` is a keyed load with a changing key) and one expression
 * joining the fields, instead of a loop that extends the line field by field; each field is still
 * `csvField`'s (V8 inlines it: handling numbers and strings in the generated code was no faster).
 * Arrays and non-objects go to `generic`. About 35 % less CPU per Nexmark q10 row (~430 → ~275
 * ns). Undefined where the process forbids compiled code.
 */
function keyedEncoder(keys: readonly string[], generic: (record: unknown) => string | undefined): ((record: unknown) => string | undefined) | undefined {
  // Field names enter the code only through JSON.stringify (core/codegen.ts).
  const fields = keys.map((key, i) => `const f${i} = csvField(record[${JSON.stringify(key)}]);\nif (f${i} === undefined) return undefined;`);
  const make = compileFunction<(generic: unknown, csvField: unknown) => (record: unknown) => string | undefined>(
    ["generic", "csvField"],
    `return function encodeCsvRecord(record) {
if (record === null || typeof record !== "object" || Array.isArray(record)) return generic(record);
${fields.join("\n")}
return ${keys.map((_, i) => `f${i}`).join(' + "," + ')} + "\\n";
};`,
  );
  return make?.(generic, csvField);
}


/** One field; undefined for a value csv-stringify refuses (functions, symbols). */
function csvField(value: unknown): string | undefined {
  let text: string;
  switch (typeof value) {
    case "string":
      text = value;
      break;
    case "number":
    case "bigint":
      return `${value}`; // never holds a quote, a comma or a line break
    case "boolean":
      return value ? "1" : "";
    case "undefined":
      return "";
    case "object":
      if (value === null) return "";
      if (value instanceof Date) return `${value.getTime()}`;
      text = JSON.stringify(value) as string | undefined ?? "";
      break;
    default:
      return undefined;
  }
  // Four indexOf scans (memchr-like) beat one regex test: ~60 against ~95 ns for a q10 bid's
  // ~68-character padding.
  const quote = text.indexOf('"');
  if (quote < 0 && text.indexOf(",") < 0 && text.indexOf("\n") < 0 && text.indexOf("\r") < 0) return text;
  return `"${quote < 0 ? text : text.replaceAll('"', '""')}"`;
}
