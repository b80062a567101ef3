#!/usr/bin/env node
// Entry point of the `eddy` command. Registers tsx so job files (and Eddy's own sources) run as
// TypeScript without a build step, then hands over to the CLI.
import { register } from "tsx/esm/api";

register();
const argv = process.argv.slice(2);
if (argv[0] === "savepoint" && argv[1] === "inspect") {
  // Reading a savepoint needs the savepoint layer, which sits above the CLI's (control/).
  const { runInspectCommand } = await import("../src/savepoint/inspect.ts");
  process.exitCode = await runInspectCommand(argv.slice(2), { stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) });
} else {
  await import("../src/control/cli.ts");
}
