import assert from "node:assert/strict";
import { test } from "node:test";
import { ERASE_LINE, StatusLine, type TerminalStream } from "./status-line.ts";

/** One screen: what both streams wrote, in order, tagged by stream. */
function screen(errIsTTY: boolean, outIsTTY: boolean) {
  const writes: string[] = [];
  const stream = (tag: string, isTTY: boolean): TerminalStream => ({ isTTY, write: (text: string) => writes.push(`${tag}:${text}`) });
  return { writes, err: stream("err", errIsTTY), out: stream("out", outIsTTY) };
}

test("on one terminal, the status line is erased before a record and redrawn by the next show", () => {
  const { writes, err, out } = screen(true, true);
  const status = new StatusLine(err, out);
  status.show("[eddy] job: 10 records read");
  status.writeRecord('{"a":1}');
  status.writeRecord('{"a":2}');
  status.show("[eddy] job: 20 records read");
  assert.deepEqual(writes, [
    `err:${ERASE_LINE}[eddy] job: 10 records read`,
    `err:${ERASE_LINE}`,
    'out:{"a":1}\n',
    'out:{"a":2}\n',
    `err:${ERASE_LINE}[eddy] job: 20 records read`,
  ]);
});

test("with stdout redirected, records pass untouched and the status line stays on the terminal", () => {
  const { writes, err, out } = screen(true, false);
  const status = new StatusLine(err, out);
  status.show("progress");
  status.writeRecord("r");
  assert.deepEqual(writes, [`err:${ERASE_LINE}progress`, "out:r\n"]);
});

test("no status line when stderr is not a terminal or progress is off: only the records", () => {
  for (const [errIsTTY, wanted] of [[false, true], [true, false]] as const) {
    const { writes, err, out } = screen(errIsTTY, true);
    const status = new StatusLine(err, out, wanted);
    assert.equal(status.enabled, false);
    status.show("progress");
    status.writeRecord("r");
    status.writeError("[eddy] a log line\n");
    status.clear();
    assert.deepEqual(writes, ["out:r\n", "err:[eddy] a log line\n"]);
  }
});

test("stderr messages and the final clear erase a drawn line once, and only a drawn one", () => {
  const { writes, err, out } = screen(true, true);
  const status = new StatusLine(err, out);
  status.writeError("before\n");
  status.show("progress");
  status.writeError("log\n");
  status.writeError("log 2\n");
  status.show("progress");
  status.clear();
  status.clear();
  assert.deepEqual(writes, ["err:before\n", `err:${ERASE_LINE}progress`, `err:${ERASE_LINE}`, "err:log\n", "err:log 2\n", `err:${ERASE_LINE}progress`, `err:${ERASE_LINE}`]);
});
