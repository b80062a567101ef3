/**
 * Schemas of the schema registry tests (packages/eddy-kafka/src/schema-registry.test.ts,
 * test/kafka-schema-registry.test.ts): an order as Avro, JSON Schema and Protobuf.
 */
import { create, createFileRegistry } from "@bufbuild/protobuf";
import { FieldDescriptorProto_Label, FieldDescriptorProto_Type, FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";

export interface Order {
  readonly id: string;
  readonly amount: number;
}

export const ORDER_AVRO = JSON.stringify({ type: "record", name: "Order", namespace: "eddy.test", fields: [{ name: "id", type: "string" }, { name: "amount", type: "int" }] });
export const ORDER_JSON = { $schema: "http://json-schema.org/draft-07/schema#", type: "object", properties: { id: { type: "string" }, amount: { type: "integer" } }, required: ["id", "amount"] };

/** A Protobuf message type made at run time (what protoc-gen-es would generate): eddy.test.Order { string id = 1; int32 amount = 2; }. */
const orderFile = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "eddy/test/order.proto",
    package: "eddy.test",
    syntax: "proto3",
    messageType: [
      {
        name: "Order",
        field: [
          { name: "id", number: 1, type: FieldDescriptorProto_Type.STRING, label: FieldDescriptorProto_Label.OPTIONAL, jsonName: "id" },
          { name: "amount", number: 2, type: FieldDescriptorProto_Type.INT32, label: FieldDescriptorProto_Label.OPTIONAL, jsonName: "amount" },
        ],
      },
    ],
  }),
  () => undefined,
);
export const OrderProto = orderFile.getMessage("eddy.test.Order")!;
