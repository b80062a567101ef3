/**
 * Modules a worker already holds when it starts from a bundle (see worker-bundle.ts): the job's
 * module and a checkpoint storage module are compiled into the worker's bundle, so importing them
 * again by URL would load a second copy through a TypeScript loader the worker does not have.
 */
const preloaded = new Map<string, Record<string, unknown>>();

/** Called by a bundle's entry before the worker runs: module namespaces by their file URL. */
export function preloadModules(modules: readonly (readonly [url: string, namespace: Record<string, unknown>])[]): void {
  for (const [url, namespace] of modules) preloaded.set(url, namespace);
}

/** The module at `url`: the preloaded namespace, else a dynamic import. */
export async function importModule(url: string): Promise<Record<string, unknown>> {
  return preloaded.get(url) ?? ((await import(url)) as Record<string, unknown>);
}
