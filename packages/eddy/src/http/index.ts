/**
 * http/ — the HTTP plumbing every endpoint of a job shares: a server that enforces the bounds
 * (connections, header and request deadlines, header size; bounded-server.ts) and answers what it
 * refuses with JSON errors (http-endpoint.ts), and listening on loopback.
 *
 * May import: core/ only (and node:http).
 *
 * Invariants: every server a job opens is made by createBoundedServer; an error answer carries an
 * ErrorCode; nothing here knows what a request means.
 */
export { CONTROL_API_BOUNDS, createBoundedServer, MAX_HEADER_BYTES, STATE_SERVER_BOUNDS, type HttpBounds } from "./bounded-server.ts";
