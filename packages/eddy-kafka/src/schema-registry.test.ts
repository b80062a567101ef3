/**
 * Schema registry serdes (schema-registry.ts), verified two ways, never against a real registry
 * (none runs here): `@confluentinc/schemaregistry`'s own MockClient for the serde logic, and the
 * real SchemaRegistryClient against an HTTP stand-in (fake-schema-registry.ts) for its REST path:
 * the requests it makes, caching, basic auth, and how failures are classified (the record's fault:
 * an ordinary error for the error policy; the registry's: SCHEMA_REGISTRY_FAILED).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createServer as createNetServer, type AddressInfo, type Socket } from "node:net";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { create, createMutableRegistry } from "@bufbuild/protobuf";
import { MockClient } from "@confluentinc/schemaregistry";
import { EddyError } from "eddy";
import type { ConsumerRecord } from "./client.ts";
import { serveFakeSchemaRegistry, type FakeSchemaRegistry } from "./fake-schema-registry.ts";
import { schemaRegistry } from "./schema-registry.ts";
import { ORDER_AVRO, ORDER_JSON, OrderProto } from "../../../test/kafka-registry-fixtures.ts";


const record = (topic: string, value: Uint8Array | null, key: Uint8Array | null = null, offset = 0): ConsumerRecord => ({ topic, partition: 0, offset, key, value, headers: [], timestamp: 0 });
const isCode = (code: string) => (e: unknown) => e instanceof EddyError && e.code === code;

const servers: FakeSchemaRegistry[] = [];
after(async () => {
  for (const s of servers) await s.close();
});

test("MockClient: Avro, JSON Schema and Protobuf round trips in Confluent's wire format; the serializer looks its schema up (SCHEMA_NOT_REGISTERED until registered, or autoRegister); keys under <topic>-key", async () => {
  const client = new MockClient({ baseURLs: ["mock://"] });
  // Avro: not registered → the serializer refuses (a deployment registers); with autoRegister it registers.
  const strict = schemaRegistry.avro<{ id: string; amount: number }>({ client, schema: ORDER_AVRO });
  await assert.rejects(strict.serialize("orders", { id: "o1", amount: 5 }), isCode("SCHEMA_NOT_REGISTERED"));
  const avroOut = schemaRegistry.avro<{ id: string; amount: number }>({ client, schema: ORDER_AVRO, autoRegister: true });
  const bytes = (await avroOut.serialize("orders", { id: "o1", amount: 5 }))!;
  const id = await client.getId("orders-value", { schemaType: "AVRO", schema: ORDER_AVRO });
  assert.deepEqual([...bytes.subarray(0, 5)], [0, 0, 0, 0, id], "magic byte 0, then the schema id (big endian)");
  assert.deepEqual(await strict.serialize("orders", { id: "o2", amount: 6 }).then((b) => b!.length > 5), true, "once registered, the strict serializer finds it");
  const avroIn = schemaRegistry.avro<{ id: string; amount: number }>({ client });
  assert.deepEqual({ ...(await avroIn.deserialize(record("orders", bytes))) }, { id: "o1", amount: 5 });
  assert.equal(await avroIn.deserialize(record("orders", null)), null, "a tombstone is null");
  await assert.rejects(avroOut.serialize("orders", { id: "o3", amount: "many" } as never), (e: unknown) => !(e instanceof EddyError) && /Invalid message/.test((e as Error).message), "a value not of the schema: the record's error");

  // Keys: subject orders-key, read from record.key.
  const keyOut = schemaRegistry.avro<string>({ client, schema: '"string"', isKey: true, autoRegister: true });
  const keyIn = schemaRegistry.avro<string>({ client, isKey: true });
  const k = (await keyOut.serialize("orders", "o1"))!;
  assert.deepEqual((await client.getAllSubjects()).sort(), ["orders-key", "orders-value"]);
  assert.equal(await keyIn.deserialize(record("orders", bytes, k)), "o1");

  // JSON Schema.
  const jsonOut = schemaRegistry.json<{ id: string; amount: number }>({ client, schema: ORDER_JSON, autoRegister: true, serdeConfig: { validate: true } });
  const jsonIn = schemaRegistry.json<{ id: string; amount: number }>({ client });
  const jb = (await jsonOut.serialize("orders-json", { id: "j1", amount: 7 }))!;
  assert.equal(jb[0], 0);
  assert.deepEqual(await jsonIn.deserialize(record("orders-json", jb)), { id: "j1", amount: 7 });
  await assert.rejects(jsonOut.serialize("orders-json", { id: "j2" } as never), (e: unknown) => !(e instanceof EddyError), "validated against the schema: the record's error");

  // Protobuf: the schema is the message's descriptor.
  const protoOut = schemaRegistry.protobuf({ client, protobufRegistry: createMutableRegistry(OrderProto), autoRegister: true });
  const protoIn = schemaRegistry.protobuf<{ id: string; amount: number }>({ client });
  const pb = (await protoOut.serialize("orders-pb", create(OrderProto, { id: "p1", amount: 9 })))!;
  const back = await protoIn.deserialize(record("orders-pb", pb));
  assert.deepEqual({ id: back.id, amount: back.amount }, { id: "p1", amount: 9 });

  // Bytes that are not of the format: the record's error, never SCHEMA_REGISTRY_FAILED.
  const wrongMagic = Uint8Array.from([7, 0, 0, 0, 1, 2, 3]);
  await assert.rejects(avroIn.deserialize(record("orders", wrongMagic)), (e: unknown) => !(e instanceof EddyError) && /magic byte/i.test((e as Error).message));
  const unknownId = Uint8Array.from([0, 0, 0, 0x7f, 0x7f, 2, 3]);
  await assert.rejects(avroIn.deserialize(record("orders", unknownId)), (e: unknown) => !(e instanceof EddyError) && /not found/i.test((e as Error).message));
});

test("options: INVALID_KAFKA_OPTIONS for a missing url/client, a bad URL, basic and bearer auth together; a serializer without a schema is refused when checked", () => {
  const cases: [() => unknown, RegExp][] = [
    [() => schemaRegistry.avro({}), /exactly one of `url` and `client`/],
    [() => schemaRegistry.avro({ url: "ftp://x" }), /http:\/\/ or https:\/\//],
    [() => schemaRegistry.avro({ url: "http://x", basicAuth: { username: "u", password: "p" }, bearerAuth: { token: "t" } }), /at most one of `basicAuth` and `bearerAuth`/],
    [() => schemaRegistry.avro({ url: "http://x", subjectNameStrategy: "weird" as never }), /subjectNameStrategy/],
    [() => schemaRegistry.avro({ url: "http://x" }).checkSerializer(), /needs `schema`/],
    [() => schemaRegistry.protobuf({ url: "http://x" }).checkSerializer(), /needs `protobufRegistry`/],
  ];
  for (const [f, message] of cases) assert.throws(f, (e: unknown) => e instanceof EddyError && e.code === "INVALID_KAFKA_OPTIONS" && message.test(e.message), String(message));
  // A URL with user info is never echoed with it.
  assert.throws(() => schemaRegistry.avro({ url: ["http://ok", "ftp://user:s3cret@host"] }), (e: unknown) => e instanceof Error && !e.message.includes("s3cret"));
});

test("HTTP stand-in: the real client's REST path (lookup by subject, schema by id, both cached), basic auth sent; an unknown id is the record's error; a refused password, HTTP 503, a registry that never answers and a closed port are SCHEMA_REGISTRY_FAILED without the secret", async () => {
  const registry = await serveFakeSchemaRegistry({ basicAuth: { username: "eddy", password: "s3cret" } });
  servers.push(registry);
  const id = registry.register("orders-value", "AVRO", ORDER_AVRO);
  const connection = { url: registry.url, basicAuth: { username: "eddy", password: "s3cret" }, clientConfig: { maxRetries: 0 } };
  const out = schemaRegistry.avro<{ id: string; amount: number }>({ ...connection, schema: ORDER_AVRO });
  const inn = schemaRegistry.avro<{ id: string; amount: number }>(connection);
  const encoded: Uint8Array[] = [];
  for (let i = 0; i < 20; i++) encoded.push((await out.serialize("orders", { id: `o${i}`, amount: i }))!);
  const decoded = await Promise.all(encoded.map((b, i) => inn.deserialize(record("orders", b, null, i))));
  assert.deepEqual(decoded.map((d) => `${d.id}:${d.amount}`), Array.from({ length: 20 }, (_, i) => `o${i}:${i}`));
  // What the clients asked for 20 records each way, then cached: the serializer, the id of its schema
  // under the subject, then (Confluent's serializer with that id) the schema of the id and its id
  // again as the registry gave it; the deserializer, the schema of the id.
  assert.deepEqual(registry.requests, ["POST /subjects/orders-value?normalize=false", `GET /schemas/ids/${id}?subject=orders-value`, "POST /subjects/orders-value?normalize=false", `GET /schemas/ids/${id}?subject=orders-value`]);

  const unknown = Uint8Array.from([0, 0, 0, 0, 99, 2, 0x6f]);
  await assert.rejects(inn.deserialize(record("orders", unknown)), (e: unknown) => !(e instanceof EddyError) && /not found/i.test((e as Error).message), "an unknown id (404) is the record's");

  const wrongPassword = schemaRegistry.avro({ url: registry.url, basicAuth: { username: "eddy", password: "wr0ng-secret" }, clientConfig: { maxRetries: 0 } });
  await assert.rejects(wrongPassword.deserialize(record("orders", encoded[0]!)), (e: unknown) => isCode("SCHEMA_REGISTRY_FAILED")(e) && /HTTP 401/.test((e as Error).message) && !JSON.stringify({ m: (e as Error).message, c: String((e as Error).cause) }).includes("wr0ng"));

  registry.failWith = 503;
  const fresh = schemaRegistry.avro(connection);
  await assert.rejects(fresh.deserialize(record("orders", encoded[0]!)), (e: unknown) => isCode("SCHEMA_REGISTRY_FAILED")(e) && /HTTP 503/.test((e as Error).message));
  registry.failWith = undefined;

  // A registry that takes the connection and never answers: the request times out.
  const held: Socket[] = [];
  const silent = createNetServer((socket) => void held.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  try {
    const mute = schemaRegistry.avro({ url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, clientConfig: { maxRetries: 0, createAxiosDefaults: { timeout: 200 } } });
    await assert.rejects(mute.deserialize(record("orders", encoded[0]!)), (e: unknown) => isCode("SCHEMA_REGISTRY_FAILED")(e) && /did not answer.*timeout/i.test((e as Error).message));
  } finally {
    for (const s of held) s.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }

  const gone = await serveFakeSchemaRegistry();
  await gone.close();
  const down = schemaRegistry.avro({ url: gone.url.replace("http://", "http://eddy:s3cret@"), clientConfig: { maxRetries: 0 } });
  await assert.rejects(down.deserialize(record("orders", encoded[0]!)), (e: unknown) => isCode("SCHEMA_REGISTRY_FAILED")(e) && /did not answer/.test((e as Error).message) && !(e as Error).message.includes("s3cret"));
});

test("eddy-kafka loads without @confluentinc/schemaregistry; a registry serde then fails with SCHEMA_REGISTRY_NOT_INSTALLED", () => {
  const here = fileURLToPath(new URL(".", import.meta.url));
  // A resolve hook hides the package, as if it were not installed.
  const hook = "data:text/javascript," + encodeURIComponent(`export async function resolve(s, c, next) { if (s.startsWith("@confluentinc/schemaregistry")) { const e = new Error("Cannot find package '" + s + "'"); e.code = "ERR_MODULE_NOT_FOUND"; throw e; } return next(s, c); }`);
  const script = `
    import { register } from "node:module";
    register(${JSON.stringify(hook)});
    const { KafkaSource, schemaRegistry } = await import(${JSON.stringify(new URL("./index.ts", import.meta.url).href)});
    KafkaSource.create({ client: () => ({}), topics: ["t"], deserializer: "json" });
    const serde = schemaRegistry.avro({ url: "http://127.0.0.1:1" });
    KafkaSource.create({ client: () => ({}), topics: ["t"], deserializer: serde });
    try {
      await serde.deserialize({ topic: "t", partition: 0, offset: 0, key: null, value: new Uint8Array([0, 0, 0, 0, 1]), headers: [], timestamp: 0 });
      console.log("no error");
    } catch (e) { console.log(e.code + " " + e.message); }
  `;
  const r = spawnSync(process.execPath, ["-C", "eddy-source", "--import", "tsx", "--input-type=module", "-e", script], { cwd: here, encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^SCHEMA_REGISTRY_NOT_INSTALLED .*npm install @confluentinc\/schemaregistry/m);
});
