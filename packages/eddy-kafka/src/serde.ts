/**
 * How records become Kafka bytes and back. Built in: string (UTF-8), JSON (UTF-8 text) and bytes
 * (as is); anything else is a function. A source's deserializer function gets the whole record
 * (key, headers, topic, partition, offset, timestamp); what it throws goes to the source's error
 * policy with the record's topic, partition and offset.
 *
 * Functions may return a promise (a native Promise): the source then awaits the fetched records in
 * offset order before emitting them, the sink awaits the record before taking the next one. Avro,
 * JSON Schema and Protobuf through a schema registry are such serdes (schema-registry.ts).
 *
 * An EddyError thrown (or rejected) by a serde is not the record's fault (a registry that cannot be
 * reached): it fails the task instead of going to the error policy.
 */
import { EddyError } from "eddy";
import type { ConsumerRecord } from "./client.ts";
import { SchemaRegistrySerde } from "./schema-registry.ts";

/**
 * UTF-8 bytes of a string. Buffer.from, not TextEncoder: for the short strings of records it costs
 * about half (TextEncoder.encode ~1 µs more per call in Node 20, measured on JSON records of ~60
 * bytes); the bytes are the same (lone surrogates become U+FFFD in both).
 */
const utf8Bytes = (s: string): Uint8Array => Buffer.from(s, "utf8");
/** Fatal: bytes that are not UTF-8 are a bad record, not a string with replacement characters. */
const decoder = new TextDecoder("utf-8", { fatal: true });

type Bytes = Uint8Array | string | null;

/** A sink's value serializer: a built-in format, a schema registry serde, or a function (which may return a promise). */
export type KafkaValueSerializer<T> = "json" | "string" | "bytes" | SchemaRegistrySerde<T> | ((value: T) => Bytes | Promise<Bytes>);

/** A source's deserializer: a built-in format of the value, a schema registry serde, or a function of the whole record (which may return a promise). */
export type KafkaDeserializer<T> = "json" | "string" | "bytes" | SchemaRegistrySerde<T> | ((record: ConsumerRecord) => T | Promise<T>);

/** Whether an error a serde threw fails the task (an EddyError: the registry, not the record) rather than going to the error policy. */
export const failsTask = (e: unknown): boolean => e instanceof EddyError;

export function toBytes(x: Uint8Array | string | null): Uint8Array | null {
  return x === null ? null : typeof x === "string" ? utf8Bytes(x) : x;
}

/** The function that serializes values (of records of `topic`) per `serializer`. */
export function valueSerializer<T>(serializer: KafkaValueSerializer<T>): (value: T, topic: string) => Uint8Array | null | Promise<Uint8Array | null> {
  if (serializer instanceof SchemaRegistrySerde) return (v, topic) => serializer.serialize(topic, v);
  switch (serializer) {
    case "json":
      return (v) => {
        const text = JSON.stringify(v);
        if (text === undefined) throw new TypeError(`the value ${String(v)} has no JSON form`);
        return utf8Bytes(text);
      };
    case "string":
      return (v) => {
        if (typeof v !== "string") throw new TypeError(`the "string" serializer takes strings, got ${typeof v}`);
        return utf8Bytes(v);
      };
    case "bytes":
      return (v) => {
        if (v !== null && !(v instanceof Uint8Array)) throw new TypeError(`the "bytes" serializer takes Uint8Array (or null), got ${typeof v}`);
        return v as Uint8Array | null;
      };
    default:
      return (v) => {
        const x = serializer(v);
        return x instanceof Promise ? x.then(toBytes) : toBytes(x);
      };
  }
}

/** The function that deserializes records per `deserializer`. */
export function recordDeserializer<T>(deserializer: KafkaDeserializer<T>): (record: ConsumerRecord) => T | Promise<T> {
  if (deserializer instanceof SchemaRegistrySerde) return (r) => deserializer.deserialize(r);
  switch (deserializer) {
    case "json":
      return (r) => {
        if (r.value === null) throw new TypeError("the record has no value (a tombstone); the json deserializer needs one");
        return JSON.parse(decoder.decode(r.value)) as T;
      };
    case "string":
      return (r) => (r.value === null ? null : decoder.decode(r.value)) as T;
    case "bytes":
      return (r) => r.value as T;
    default:
      return deserializer;
  }
}

/** UTF-8 text of bytes (throws on invalid UTF-8), for deserializer functions reading keys or headers. */
export function utf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}
