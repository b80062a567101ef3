/**
 * A stand-in for a Confluent Schema Registry in tests (no registry runs where Eddy is tested: it is
 * Java): an HTTP server on 127.0.0.1 answering the part of the REST API that
 * `@confluentinc/schemaregistry`'s client calls for the serdes with the topic name strategy:
 *
 * - POST /subjects/{subject}/versions: register a schema (the same schema text gets the same id);
 * - POST /subjects/{subject}: look a schema up under a subject (40403 when it is not there);
 * - GET /schemas/ids/{id}: a schema by id (40403 when unknown);
 * - GET /subjects/{subject}/versions/latest and /versions/{n}: a subject's version.
 *
 * Schemas are compared as text, not normalized or checked for compatibility, and `format=` is
 * ignored (a schema is returned as it was registered). With `basicAuth` every request must carry
 * it (401 otherwise); `failWith` makes it answer every request with that HTTP status.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

interface Stored {
  readonly id: number;
  readonly schemaType: string;
  readonly schema: string;
  readonly references: readonly unknown[];
}

export interface FakeSchemaRegistry {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Every request as `METHOD path?query`, in order. */
  readonly requests: string[];
  /** Answer every request with this status (e.g. 503); undefined: answer normally. */
  failWith: number | undefined;
  /** Registers a schema under a subject out of band (as a deployment would); its id. */
  register(subject: string, schemaType: "AVRO" | "JSON" | "PROTOBUF", schema: string): number;
  close(): Promise<void>;
}

export async function serveFakeSchemaRegistry(options: { readonly basicAuth?: { readonly username: string; readonly password: string } } = {}): Promise<FakeSchemaRegistry> {
  const schemas: Stored[] = [];
  const subjects = new Map<string, number[]>();
  const requests: string[] = [];
  const auth = options.basicAuth === undefined ? undefined : `Basic ${Buffer.from(`${options.basicAuth.username}:${options.basicAuth.password}`).toString("base64")}`;

  const idOf = (schemaType: string, schema: string, references: readonly unknown[]): number => {
    const found = schemas.find((s) => s.schemaType === schemaType && s.schema === schema);
    if (found !== undefined) return found.id;
    const id = schemas.length + 1;
    schemas.push({ id, schemaType, schema, references });
    return id;
  };
  const register = (subject: string, schemaType: string, schema: string, references: readonly unknown[] = []): { id: number; version: number } => {
    const id = idOf(schemaType, schema, references);
    const versions = subjects.get(subject) ?? [];
    if (!versions.includes(id)) versions.push(id);
    subjects.set(subject, versions);
    return { id, version: versions.indexOf(id) + 1 };
  };
  const version = (subject: string, n: number) => {
    const id = subjects.get(subject)![n - 1]!;
    const s = schemas[id - 1]!;
    return { subject, id, version: n, schemaType: s.schemaType, schema: s.schema, references: s.references };
  };

  const registry: FakeSchemaRegistry = {
    url: "",
    requests,
    failWith: undefined,
    register: (subject, schemaType, schema) => register(subject, schemaType, schema).id,
    close: async () => {},
  };

  const answer = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { "content-type": "application/vnd.schemaregistry.v1+json" });
    res.end(JSON.stringify(body));
  };
  const notFound = (res: ServerResponse, code: number, message: string): void => answer(res, 404, { error_code: code, message });

  const handle = (req: IncomingMessage, body: string, res: ServerResponse): void => {
    const url = new URL(req.url ?? "/", "http://registry");
    requests.push(`${req.method} ${url.pathname}${url.search}`);
    if (auth !== undefined && req.headers.authorization !== auth) return answer(res, 401, { error_code: 40101, message: "Unauthorized" });
    if (registry.failWith !== undefined) return answer(res, registry.failWith, { error_code: registry.failWith * 100, message: "the stand-in was told to fail" });
    const parts = url.pathname.split("/").filter((p) => p !== "").map(decodeURIComponent);
    const posted = (): { schemaType: string; schema: string; references: unknown[] } => {
      const b = JSON.parse(body) as { schemaType?: string; schema: string; references?: unknown[] };
      return { schemaType: b.schemaType ?? "AVRO", schema: b.schema, references: b.references ?? [] };
    };
    if (req.method === "GET" && parts[0] === "schemas" && parts[1] === "ids" && parts.length === 3) {
      const s = schemas[Number(parts[2]) - 1];
      if (s === undefined) return notFound(res, 40403, `Schema ${parts[2]} not found`);
      return answer(res, 200, { schemaType: s.schemaType, schema: s.schema, references: s.references });
    }
    if (parts[0] === "subjects" && parts.length >= 2) {
      const subject = parts[1]!;
      if (req.method === "POST" && parts.length === 3 && parts[2] === "versions") {
        const p = posted();
        const { id, version: v } = register(subject, p.schemaType, p.schema, p.references);
        return answer(res, 200, { id, subject, version: v, schemaType: p.schemaType, schema: p.schema });
      }
      if (req.method === "POST" && parts.length === 2) {
        if (!subjects.has(subject)) return notFound(res, 40401, `Subject '${subject}' not found.`);
        const p = posted();
        const s = schemas.find((x) => x.schemaType === p.schemaType && x.schema === p.schema && subjects.get(subject)!.includes(x.id));
        if (s === undefined) return notFound(res, 40403, "Schema not found");
        return answer(res, 200, version(subject, subjects.get(subject)!.indexOf(s.id) + 1));
      }
      if (req.method === "GET" && parts.length === 4 && parts[2] === "versions") {
        const versions = subjects.get(subject);
        if (versions === undefined) return notFound(res, 40401, `Subject '${subject}' not found.`);
        const n = parts[3] === "latest" ? versions.length : Number(parts[3]);
        if (!(n >= 1 && n <= versions.length)) return notFound(res, 40402, `Version ${parts[3]} not found.`);
        return answer(res, 200, version(subject, n));
      }
    }
    answer(res, 404, { error_code: 404, message: `the stand-in does not serve ${req.method} ${url.pathname}` });
  };

  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      try {
        handle(req, body, res);
      } catch (e) {
        answer(res, 500, { error_code: 50001, message: String(e) });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(registry, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
