/**
 * Avro, JSON Schema and Protobuf through a Confluent Schema Registry (issue 26), with Confluent's
 * own client and serdes (`@confluentinc/schemaregistry`, an optional peer dependency: loaded on
 * first use, so eddy-kafka loads without it; SCHEMA_REGISTRY_NOT_INSTALLED says to install it).
 *
 * `schemaRegistry.avro({ url })` is a KafkaSource `deserializer` (the record's value; `isKey: true`
 * its key) and a KafkaSink `serializer` (with `schema`, or `useLatestVersion`); its `deserialize`
 * and `serialize` methods compose with functions (a key and a value, headers, offsets). The wire
 * format is Confluent's: magic byte 0, the schema id (4 bytes, big endian), then the payload
 * (Protobuf: message indexes before it).
 *
 * Subjects: `<topic>-value` / `<topic>-key` by default (TopicNameStrategy, as Flink's
 * avro-confluent format); "record", "topic-record", "associated" or a function otherwise. The
 * serializer looks up the id of its schema under the subject and does not register it unless
 * `autoRegister` is set (registration belongs in deployment; a job that registers can change a
 * subject's latest version by accident).
 *
 * Errors: bytes that do not decode (no magic byte, a schema id the registry does not know, a
 * payload that does not match its schema) throw an ordinary error: the source sends the record to
 * its error policy with topic, partition and offset, the sink to `reportBadRecord`. A registry
 * that cannot be asked (no connection, a timeout, HTTP 5xx or 429, refused credentials) throws
 * SCHEMA_REGISTRY_FAILED (retryable), which fails the task rather than the record: the job restarts
 * per its restart strategy from its last checkpoint. Error messages carry the registry's URL
 * without user info, never credentials.
 */
import { EddyError } from "eddy";
import type { ConsumerRecord } from "./client.ts";

type SchemaRegistryModule = typeof import("@confluentinc/schemaregistry");
type Client = import("@confluentinc/schemaregistry").Client;
type ConfluentSerializer = import("@confluentinc/schemaregistry").Serializer;
type ConfluentDeserializer = import("@confluentinc/schemaregistry").Deserializer;

export type SchemaFormat = "avro" | "json" | "protobuf";

/** How subjects are named: Confluent's strategies, or a function. */
export type SubjectNameStrategy = "topic" | "record" | "topic-record" | "associated" | ((topic: string, isKey: boolean) => string);

export interface SchemaRegistryOptions {
  /** The registry's URL, or several (tried in order). Or `client`. */
  readonly url?: string | readonly string[];
  /**
   * A client of `@confluentinc/schemaregistry` (`SchemaRegistryClient`, or its `MockClient` in
   * tests), or a function making one; instead of `url`. A function is called once per thread.
   */
  readonly client?: object | (() => object);
  /** HTTP basic auth (Confluent Cloud: the API key and secret). */
  readonly basicAuth?: { readonly username: string; readonly password: string };
  /**
   * Bearer auth, passed to the client as its `bearerAuthCredentials`: `{ credentialsSource:
   * "STATIC_TOKEN", token, logicalCluster, identityPoolId }` or an OAuth client
   * (`"OAUTHBEARER"`, `issuerEndpointUrl`, `clientId`, `clientSecret`, `scope`, ...).
   */
  readonly bearerAuth?: Readonly<Record<string, unknown>>;
  /** More of the client's ClientConfig, as is (`maxRetries`, `retriesWaitMs`, `cacheCapacity`, `createAxiosDefaults: { timeout }` (default 30 s here), ...). */
  readonly clientConfig?: Readonly<Record<string, unknown>>;
  /** The record's key rather than its value: subject `<topic>-key`; a deserializer reads `record.key`. */
  readonly isKey?: boolean;
  /** Default "topic": `<topic>-value` / `<topic>-key`. */
  readonly subjectNameStrategy?: SubjectNameStrategy;
  /**
   * Serializer, Avro and JSON Schema: the schema values are written with (Avro: its JSON text or
   * object; JSON Schema: the schema object or its text). Or `useLatestVersion`. (Protobuf: the
   * message's own descriptor.)
   */
  readonly schema?: string | object;
  /** Serializer: register `schema` under the subject if it is not there (default false: it must be registered). */
  readonly autoRegister?: boolean;
  /** Serializer: write with the subject's latest version. Deserializer: read into it (Avro: schema resolution; its migration rules). */
  readonly useLatestVersion?: boolean;
  /** Protobuf serializer: a `@bufbuild/protobuf` Registry holding the message types written (`createMutableRegistry(OrderSchema)`). */
  readonly protobufRegistry?: object;
  /** More of the Confluent serde's config, as is (`ruleConfig`, Avro type options, JSON Schema `validate`, ...). */
  readonly serdeConfig?: Readonly<Record<string, unknown>>;
}

/** How long a request to the registry may take (axios's `timeout`), unless `clientConfig.createAxiosDefaults.timeout` says otherwise. */
const DEFAULT_TIMEOUT_MS = 30_000;

const NOT_INSTALLED_HINT = "install it next to eddy-kafka: `npm install @confluentinc/schemaregistry`";

let loading: Promise<SchemaRegistryModule> | undefined;

/** The package, imported once; SCHEMA_REGISTRY_NOT_INSTALLED when it cannot be. */
function loadModule(): Promise<SchemaRegistryModule> {
  return (loading ??= import("@confluentinc/schemaregistry").catch((e: unknown) => {
    loading = undefined;
    throw new EddyError("SCHEMA_REGISTRY_NOT_INSTALLED", `eddy-kafka: a schema registry serde needs @confluentinc/schemaregistry, which could not be loaded (${e instanceof Error ? e.message : String(e)}); ${NOT_INSTALLED_HINT}`);
  }));
}

const invalid = (message: string): EddyError => new EddyError("INVALID_KAFKA_OPTIONS", `schemaRegistry: ${message}`);

/** A URL as shown in messages: without user info. */
function shown(url: string): string {
  try {
    const u = new URL(url);
    u.username = "";
    u.password = "";
    return u.toString().replace(/\/$/, "");
  } catch {
    return "(an invalid URL)";
  }
}

const STRATEGIES = { topic: "TOPIC", record: "RECORD", "topic-record": "TOPIC_RECORD", associated: "ASSOCIATED" } as const;

/** One format's (de)serializer over a registry, made on first use in each thread (the package is loaded then). */
export class SchemaRegistrySerde<T> {
  readonly format: SchemaFormat;
  readonly #o: SchemaRegistryOptions;
  readonly #where: string;
  #client: Promise<{ m: SchemaRegistryModule; client: Client }> | undefined;
  #deserializer: Promise<ConfluentDeserializer> | undefined;
  /** Per topic: the subject differs (and so the schema id). */
  readonly #serializers = new Map<string, Promise<ConfluentSerializer>>();

  constructor(format: SchemaFormat, options: SchemaRegistryOptions) {
    if (options === null || typeof options !== "object") throw invalid("options are required");
    const o = options;
    if ((o.url === undefined) === (o.client === undefined)) throw invalid("give exactly one of `url` and `client`");
    const urls = o.url === undefined ? [] : typeof o.url === "string" ? [o.url] : [...o.url];
    for (const u of urls) {
      if (typeof u !== "string" || !/^https?:\/\//.test(u)) throw invalid(`\`url\` must be http:// or https:// URLs, got ${typeof u === "string" ? JSON.stringify(shown(u)) : typeof u}`);
    }
    if (o.url !== undefined && urls.length === 0) throw invalid("`url` is an empty list");
    if (o.client !== undefined && typeof o.client !== "object" && typeof o.client !== "function") throw invalid("`client` must be a schema registry client or a function making one");
    if (o.basicAuth !== undefined && (typeof o.basicAuth?.username !== "string" || typeof o.basicAuth?.password !== "string")) throw invalid("`basicAuth` must be { username, password } (strings)");
    if (o.basicAuth !== undefined && o.bearerAuth !== undefined) throw invalid("give at most one of `basicAuth` and `bearerAuth`");
    const s = o.subjectNameStrategy;
    if (s !== undefined && typeof s !== "function" && !(s in STRATEGIES)) throw invalid(`\`subjectNameStrategy\` must be "topic", "record", "topic-record", "associated" or a function, got ${JSON.stringify(s)}`);
    if (o.schema !== undefined && o.useLatestVersion === true) throw invalid("give at most one of `schema` and `useLatestVersion`");
    if (o.schema !== undefined && format === "protobuf") throw invalid("a Protobuf serializer writes with the message's own descriptor: give `protobufRegistry`, not `schema`");
    this.format = format;
    this.#o = o;
    this.#where = urls.length > 0 ? `the schema registry at ${urls.map(shown).join(", ")}` : "the schema registry (client)";
  }

  /** Throws INVALID_KAFKA_OPTIONS when this cannot serialize (KafkaSink checks it when built). */
  checkSerializer(): void {
    const o = this.#o;
    if (o.useLatestVersion === true) return;
    if (this.format === "protobuf" && o.protobufRegistry === undefined) throw invalid("a Protobuf serializer needs `protobufRegistry` (a @bufbuild/protobuf Registry with the message types it writes) or `useLatestVersion`");
    if (this.format !== "protobuf" && o.schema === undefined) throw invalid(`an ${this.format === "avro" ? "Avro" : "JSON Schema"} serializer needs \`schema\` (or \`useLatestVersion\`)`);
  }

  /** The value (or, `isKey`, the key) of `record`. Null bytes give null (a tombstone). */
  async deserialize(record: ConsumerRecord): Promise<T> {
    const bytes = this.#o.isKey === true ? record.key : record.value;
    if (bytes === null) return null as T;
    const d = await (this.#deserializer ??= this.#makeDeserializer());
    try {
      return (await d.deserialize(record.topic, asBuffer(bytes), headersOf(record))) as T;
    } catch (e) {
      throw this.#failure(e, `read a record of ${record.topic}`);
    }
  }

  /** `value` as the bytes of a record of `topic` (null: null). */
  async serialize(topic: string, value: T): Promise<Uint8Array | null> {
    if (value === null || value === undefined) return null;
    let made = this.#serializers.get(topic);
    if (made === undefined) {
      made = this.#makeSerializer(topic);
      this.#serializers.set(topic, made);
      made.catch(() => this.#serializers.delete(topic));
    }
    const s = await made;
    try {
      return await s.serialize(topic, value);
    } catch (e) {
      // Writing, a 404 is the subject's or schema's (useLatestVersion, Protobuf), never the value's.
      if ((e as { status?: unknown })?.status === 404) throw new EddyError("SCHEMA_NOT_REGISTERED", `${this.#where} has no schema for the ${this.format} serializer of topic ${topic} under its subject: ${(e as Error).message}`);
      throw this.#failure(e, `write a record to ${topic}`);
    }
  }

  #connect(): Promise<{ m: SchemaRegistryModule; client: Client }> {
    return (this.#client ??= loadModule().then((m) => {
      const o = this.#o;
      if (o.client !== undefined) return { m, client: (typeof o.client === "function" ? (o.client as () => object)() : o.client) as Client };
      // A registry that accepts connections and never answers would hold a batch forever: requests time out (default 30 s).
      const axios = { timeout: DEFAULT_TIMEOUT_MS, ...(o.clientConfig?.createAxiosDefaults as object | undefined) };
      const config: Record<string, unknown> = { ...o.clientConfig, createAxiosDefaults: axios, baseURLs: typeof o.url === "string" ? [o.url] : [...o.url!] };
      if (o.basicAuth !== undefined) config.basicAuthCredentials = { credentialsSource: "USER_INFO", userInfo: `${o.basicAuth.username}:${o.basicAuth.password}` };
      if (o.bearerAuth !== undefined) config.bearerAuthCredentials = o.bearerAuth;
      return { m, client: new m.SchemaRegistryClient(config as unknown as import("@confluentinc/schemaregistry").ClientConfig) };
    }));
  }

  /** The Confluent serde config shared by both directions. */
  #serdeConfig(m: SchemaRegistryModule): Record<string, unknown> {
    const o = this.#o;
    const conf: Record<string, unknown> = { ...o.serdeConfig };
    if (o.useLatestVersion === true) conf.useLatestVersion = true;
    const s = o.subjectNameStrategy ?? "topic";
    if (typeof s === "function") conf.subjectNameStrategy = (topic: string, type: string) => s(topic, type === m.SerdeType.KEY);
    else conf.subjectNameStrategyType = m.SubjectNameStrategyType[STRATEGIES[s]];
    return conf;
  }

  async #makeDeserializer(): Promise<ConfluentDeserializer> {
    const { m, client } = await this.#connect();
    const type = this.#o.isKey === true ? m.SerdeType.KEY : m.SerdeType.VALUE;
    const conf = this.#serdeConfig(m);
    switch (this.format) {
      case "avro":
        return new m.AvroDeserializer(client, type, conf);
      case "json":
        return new m.JsonDeserializer(client, type, conf);
      case "protobuf":
        return new m.ProtobufDeserializer(client, type, conf);
    }
  }

  /**
   * The serializer of `topic`. With `schema`: its id under the topic's subject is looked up (or
   * registered, `autoRegister`) once, and the Confluent serializer writes with that id; Confluent's
   * serializers would otherwise infer a schema from each value.
   */
  async #makeSerializer(topic: string): Promise<ConfluentSerializer> {
    const { m, client } = await this.#connect();
    const o = this.#o;
    const type = o.isKey === true ? m.SerdeType.KEY : m.SerdeType.VALUE;
    const conf: Record<string, unknown> = { ...this.#serdeConfig(m), autoRegisterSchemas: o.autoRegister === true };
    const make = (c: Record<string, unknown>): ConfluentSerializer => {
      switch (this.format) {
        case "avro":
          return new m.AvroSerializer(client, type, c);
        case "json":
          return new m.JsonSerializer(client, type, c);
        case "protobuf":
          return new m.ProtobufSerializer(client, type, { ...c, ...(o.protobufRegistry === undefined ? {} : { registry: o.protobufRegistry as NonNullable<import("@confluentinc/schemaregistry").ProtobufSerializerConfig["registry"]> }) });
      }
    };
    this.checkSerializer();
    if (this.format === "protobuf" || o.useLatestVersion === true) return make(conf);
    const info = { schemaType: this.format === "avro" ? "AVRO" : "JSON", schema: typeof o.schema === "string" ? o.schema : JSON.stringify(o.schema!) };
    const probe = make(conf);
    try {
      const subject = await probe.subjectName(topic, info);
      const normalize = conf.normalizeSchemas === true;
      const id = o.autoRegister === true ? await client.register(subject, info, normalize) : await client.getId(subject, info, normalize);
      return make({ ...conf, autoRegisterSchemas: false, useSchemaId: id });
    } catch (e) {
      const f = this.#failure(e, `look up the schema of ${topic}`);
      if (f instanceof EddyError) throw f;
      throw new EddyError("SCHEMA_NOT_REGISTERED", `${this.#where}: the ${this.format} schema given to the serializer of topic ${topic} is not registered under its subject${o.autoRegister === true ? "" : " (register it, or set autoRegister)"}: ${f.message}`, { cause: f });
    }
  }

  /** What `e` (thrown by the client or the serde) becomes: SCHEMA_REGISTRY_FAILED when the registry could not be asked, else an error of the record. */
  #failure(e: unknown, what: string): Error {
    if (e instanceof EddyError) return e;
    const err = e as { name?: unknown; status?: unknown; isAxiosError?: unknown; response?: unknown; code?: unknown; message?: unknown };
    const message = typeof err?.message === "string" ? err.message : String(e);
    const status = typeof err?.status === "number" ? err.status : undefined;
    // An HTTP answer: 404 (unknown schema id or subject) is the record's; anything else is the registry's.
    const unreachable = err?.isAxiosError === true && err.response === undefined;
    if (unreachable || (status !== undefined && status !== 404 && err?.name !== "SerializationError")) {
      // The client's error holds the request (with its Authorization header): kept out of the cause.
      const cause = new Error(`${message}${typeof err.code === "string" ? ` (${err.code})` : ""}${status === undefined ? "" : ` (HTTP ${status})`}`);
      return new EddyError("SCHEMA_REGISTRY_FAILED", `eddy-kafka could not ${what}: ${this.#where} ${unreachable ? "did not answer" : `answered HTTP ${status}`}: ${message}`, { cause });
    }
    return e instanceof Error ? e : new Error(message);
  }
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Headers as the serdes take them (kafkajs shape): schema ids may travel in `__value_schema_id` / `__key_schema_id`. */
function headersOf(record: ConsumerRecord): Record<string, Buffer> | undefined {
  if (record.headers.length === 0) return undefined;
  const out: Record<string, Buffer> = {};
  for (const [k, v] of record.headers) out[k] = asBuffer(v);
  return out;
}

/**
 * Serdes of the Confluent wire format over a schema registry: a KafkaSource `deserializer` and a
 * KafkaSink `serializer` (see SchemaRegistryOptions).
 */
export const schemaRegistry = {
  avro: <T = unknown>(options: SchemaRegistryOptions): SchemaRegistrySerde<T> => new SchemaRegistrySerde<T>("avro", options),
  json: <T = unknown>(options: SchemaRegistryOptions): SchemaRegistrySerde<T> => new SchemaRegistrySerde<T>("json", options),
  protobuf: <T = unknown>(options: SchemaRegistryOptions): SchemaRegistrySerde<T> => new SchemaRegistrySerde<T>("protobuf", options),
};
