/**
 * The `eddy` command (bin/eddy.js imports this as `eddy/cli`): `eddy init` (init/),
 * `eddy savepoint inspect` (savepoint/, a layer above control/), and every other command
 * (control/cli.ts).
 */
const argv = process.argv.slice(2);
const io = { stdout: (s: string) => void process.stdout.write(s), stderr: (s: string) => void process.stderr.write(s) };
if (argv[0] === "savepoint" && argv[1] === "inspect") {
  const { runInspectCommand } = await import("./savepoint/inspect.ts");
  process.exitCode = await runInspectCommand(argv.slice(2), io);
} else if (argv[0] === "init") {
  const { runInitCommand } = await import("./init/init.ts");
  process.exitCode = runInitCommand(argv.slice(1), io);
} else {
  await import("./control/cli.ts");
}
