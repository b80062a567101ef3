/**
 * The custom export conditions this process resolves modules with (`node -C <name>` /
 * `--conditions`), so worker threads resolve a job's imports as the thread that built the job did.
 * Node does not pass them on by itself: a Worker started with its own `execArgv` (Eddy's workers
 * are, so that `--import` loaders, `--cpu-prof` and the like stay in the main thread) gets only
 * those, and the workers' bundle is resolved by esbuild, which knows only the conditions it is
 * given. Conditions in NODE_OPTIONS reach workers anyway; they count for the bundle too.
 */

/** Conditions given on the command line (`process.execArgv`), in order, without repeats. */
export function commandLineConditions(execArgv: readonly string[] = process.execArgv): string[] {
  return conditionsIn(execArgv);
}

/** Conditions of the command line and of NODE_OPTIONS: every one this process resolves with. */
export function processConditions(execArgv: readonly string[] = process.execArgv, nodeOptions: string | undefined = process.env.NODE_OPTIONS): string[] {
  return [...new Set([...conditionsIn(execArgv), ...conditionsIn(nodeOptions?.split(/\s+/).filter((a) => a.length > 0) ?? [])])];
}

/** The `-C x`, `--conditions x` and `--conditions=x` of an argument list (node refuses `-C=x`). */
function conditionsIn(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    let value: string | undefined;
    if (arg === "-C" || arg === "--conditions") value = args[++i];
    else if (arg.startsWith("--conditions=")) value = arg.slice("--conditions=".length);
    if (value !== undefined && value.length > 0 && !out.includes(value)) out.push(value);
  }
  return out;
}
