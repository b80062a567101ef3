import { test } from "node:test";
import assert from "node:assert/strict";
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
