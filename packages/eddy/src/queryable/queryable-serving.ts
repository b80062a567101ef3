/**
 * Serving queryable state (issue 8): on each thread that runs tasks, a state server over the
 * executor's QueryableRegistry, started when the first queryable state registers; on the
 * coordinating thread, the table of where each state's subtasks are served (the locations the
 * control API hands to clients).
 */
import { describeCause } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { QueryableEntry, QueryableRegistry } from "../runtime/queryable-registry.ts";
import type { QueryLocation } from "./queryable.ts";
import { startStateServer } from "./state-server.ts";

/** What the coordinator learns of one registration. */
export interface QueryableRegistration {
  readonly name: string;
  readonly operatorId: string;
  readonly operatorName: string;
  readonly subtask: number;
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly url: string;
}

/**
 * Serves `registry` on loopback once a state registers, and reports each registration with the
 * server's URL. `close()` stops the server (when the executor has ended).
 */
export function serveQueryableStates(
  registry: QueryableRegistry,
  options: { readonly token: string; readonly logger: Logger; readonly onRegistered: (registration: QueryableRegistration) => void },
): { close(): Promise<void> } {
  let server: ReturnType<typeof startStateServer> | undefined;
  let closed = false;
  registry.onRegister((name: string, entry: QueryableEntry) => {
    server ??= startStateServer({ token: options.token, backend: registry, logger: options.logger });
    server.then(
      ({ url }) => {
        if (closed) return;
        const { operatorId, operatorName, subtask, parallelism, maxParallelism } = entry;
        options.onRegistered({ name, operatorId, operatorName, subtask, parallelism, maxParallelism, url });
      },
      (e: unknown) => options.logger.error("the queryable state server did not start", { state: name, error: describeCause(e) }),
    );
  });
  return {
    close: async () => {
      closed = true;
      if (server !== undefined) await (await server).close();
    },
  };
}

/** Where each queryable state's subtasks are served, as registrations come in. */
export class QueryableLocations {
  readonly #states = new Map<string, { registration: QueryableRegistration; servers: (string | undefined)[] }>();
  #ended = false;

  /**
   * The execution ended (failed, or finished): its servers are gone. Locations keep their states
   * with no server, so a client hears NOT_READY (retry; a restarted job serves again) rather
   * than reaching for servers that are gone.
   */
  end(): void {
    this.#ended = true;
  }

  add(registration: QueryableRegistration): void {
    let state = this.#states.get(registration.name);
    if (state === undefined) {
      state = { registration, servers: new Array<string | undefined>(registration.parallelism).fill(undefined) };
      this.#states.set(registration.name, state);
    }
    state.servers[registration.subtask] = registration.url;
  }

  list(generation: number): QueryLocation[] {
    return [...this.#states].map(([name, { registration: r, servers }]) => ({
      name,
      operatorId: r.operatorId,
      operatorName: r.operatorName,
      maxParallelism: r.maxParallelism,
      parallelism: r.parallelism,
      generation,
      servers: this.#ended ? servers.map(() => undefined) : [...servers],
    }));
  }
}
