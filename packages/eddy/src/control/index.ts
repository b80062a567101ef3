/**
 * control/ — controlling running jobs from outside: the control API a job serves
 * (control-server.ts) with its REST read endpoints (rest-api.ts, rest-views.ts) and web UI (web-ui.ts, web-ui-auth.ts; the page's code is in packages/eddy/ui/), the registry of running jobs (control-registry.ts), the client and the
 * `eddy` commands that use them (control-client.ts, control-cli.ts, cli.ts).
 *
 * May import: every layer below, coordinator/ included.
 *
 * Invariants: loopback only, a bearer token (or a UI session with its CSRF token for POSTs) on every request, no client-supplied paths, every
 * request bounded (http/).
 */
export { startControlServer, type ControlServer } from "./control-server.ts";
