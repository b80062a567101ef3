#!/usr/bin/env node
// `npm create eddy@latest [dir]` runs this: the same as `npx eddy init [dir]`, from the Eddy
// version this package depends on (the template ships with Eddy, so the two always match).
import { runInitCommand } from "eddy/init";

process.exitCode = runInitCommand(process.argv.slice(2), {
  stdout: (s) => void process.stdout.write(s),
  stderr: (s) => void process.stderr.write(s),
});
