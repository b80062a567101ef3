/**
 * Test doubles for queryable state (queryable/queryable.ts): a job handle that is both a
 * ControlledJob and a QueryableJob, and a StateServerBackend over plain maps, so the control API,
 * state servers, the query client and `eddy query` can be tested without running a job.
 */
import type { ControlledJob } from "../coordinator/control.ts";
import type { QueryableJob, QueryLocation, StateServerBackend } from "../queryable/queryable.ts";
import { EddyError } from "../core/errors.ts";
import { mapKeyOf, type Key, type MapKey } from "../core/key.ts";

/** A running job with queryable states `states()` (asked anew on every request) and token `token`; savepoint and stop reject. */
export function fakeQueryableJob(options: { readonly id: string; readonly token: string; readonly states: () => QueryLocation[] }): ControlledJob & QueryableJob {
  return {
    id: options.id,
    name: `Fake ${options.id}`,
    startedAtMs: 0,
    status: () => "running",
    savepoint: () => Promise.reject(new Error("a fake queryable job takes no savepoints")),
    stop: () => Promise.reject(new Error("a fake queryable job does not stop")),
    cancel: () => undefined,
    token: options.token,
    queryableStates: options.states,
  };
}

/**
 * A backend serving `states` (state name → values by map key); a name not there is UNKNOWN_STATE,
 * a key `owns` refuses is NOT_OWNER. `served` lists the keys read, in order.
 */
export function mapStateBackend(
  states: Readonly<Record<string, ReadonlyMap<MapKey, unknown>>>,
  owns: (key: Key) => boolean = () => true,
): StateServerBackend & { readonly served: Key[] } {
  const served: Key[] = [];
  return {
    served,
    read(name, key) {
      const values = Object.hasOwn(states, name) ? states[name] : undefined;
      if (values === undefined) throw new EddyError("UNKNOWN_STATE", `no queryable state '${name}' here`);
      if (!owns(key)) throw new EddyError("NOT_OWNER", `the key group of ${String(key)} is not held here`);
      served.push(key);
      const mk = mapKeyOf(key);
      return values.has(mk) ? { found: true, value: values.get(mk) } : { found: false };
    },
  };
}
