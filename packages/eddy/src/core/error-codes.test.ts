import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ERROR_CODES, errorCodeSpec, isErrorCode, type ErrorCode, type ErrorDomain } from "./error-codes.ts";

const CODES = Object.keys(ERROR_CODES) as ErrorCode[];
const DOMAINS: readonly ErrorDomain[] = ["user", "external", "config", "internal"];

/** One sentence that fits a Markdown table cell. */
function isCellSentence(text: string): boolean {
  return text.trim() === text && text.length > 0 && !/[|\n]/.test(text) && /[.!?]$/.test(text);
}

test("every error code has a domain, a retry hint, a meaning and an action", () => {
  for (const code of CODES) {
    const spec = errorCodeSpec(code);
    assert.match(code, /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/, code);
    assert.ok(DOMAINS.includes(spec.domain), `${code}: domain ${spec.domain}`);
    assert.equal(typeof spec.retryable, "boolean", `${code}: retryable`);
    assert.ok(isCellSentence(spec.meaning), `${code}: meaning ${JSON.stringify(spec.meaning)}`);
    assert.ok(isCellSentence(spec.action), `${code}: action ${JSON.stringify(spec.action)}`);
    if (spec.otherDomain !== undefined) {
      assert.ok(DOMAINS.includes(spec.otherDomain.domain) && spec.otherDomain.domain !== spec.domain, `${code}: otherDomain`);
      assert.ok(spec.otherDomain.when.length > 0 && !/[|\n]/.test(spec.otherDomain.when), `${code}: otherDomain.when`);
    }
  }
});

test("isErrorCode accepts the table's codes and nothing else", () => {
  for (const code of CODES) assert.ok(isErrorCode(code), code);
  for (const other of ["", "HTTP_500", "internal", "constructor", "toString", "__proto__", "hasOwnProperty", 42, undefined, null, {}]) {
    assert.equal(isErrorCode(other), false, String(other));
  }
});

const DOCS = fileURLToPath(new URL("../../../../docs/errors.md", import.meta.url));
const BEGIN = "<!-- error codes: begin (generated) -->\n";
const END = "<!-- error codes: end -->";

/** The table docs/errors.md shows: one row a code, sorted. */
function docsTable(): string {
  const rows = [...CODES].sort().map((code) => {
    const spec = errorCodeSpec(code);
    const other = spec.otherDomain === undefined ? "" : ` (${spec.otherDomain.domain} when ${spec.otherDomain.when})`;
    return `| \`${code}\` | ${spec.domain}${other} | ${spec.retryable ? "yes" : "no"} | ${spec.meaning} | ${spec.action} |`;
  });
  return ["| Code | Domain | Retryable | Meaning | What to do |", "|---|---|---|---|---|", ...rows, ""].join("\n");
}

/** The docs' text and where its generated table starts and ends. */
function docsSection(): { text: string; start: number; end: number } {
  const text = readFileSync(DOCS, "utf8");
  const start = text.indexOf(BEGIN) + BEGIN.length;
  const end = text.indexOf(END);
  assert.ok(start >= BEGIN.length && end >= start, `docs/errors.md lacks the markers ${JSON.stringify(BEGIN)} ... ${JSON.stringify(END)}`);
  return { text, start, end };
}

if (process.env.EDDY_UPDATE_ERROR_DOCS === "1") {
  const { text, start, end } = docsSection();
  writeFileSync(DOCS, text.slice(0, start) + docsTable() + text.slice(end));
}

test("docs/errors.md lists every error code and no other", () => {
  const { text, start, end } = docsSection();
  const listed = [...text.slice(start, end).matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]!);
  const missing = CODES.filter((c) => !listed.includes(c)).sort();
  const unknown = listed.filter((c) => !isErrorCode(c)).sort();
  assert.deepEqual({ missing, unknown }, { missing: [], unknown: [] });
});

test("docs/errors.md's table says what ERROR_CODES says", () => {
  const { text, start, end } = docsSection();
  assert.equal(text.slice(start, end), docsTable(), "regenerate it: EDDY_UPDATE_ERROR_DOCS=1 node --import tsx --test packages/eddy/src/core/error-codes.test.ts");
});
