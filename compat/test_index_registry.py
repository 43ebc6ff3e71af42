"""Message indexes over values written with the schema registry's Avro and Protobuf
schemas (docs/index.md): `value:$.path` fields of records confluent-kafka's
AvroSerializer and ProtobufSerializer wrote are found exactly as a full scan decoded
by their deserializers finds them, before and after the index catches up. KafkaJS's
own encoder is tested in compat/js/schema-registry.test.js."""

import json
import uuid

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from conftest import free_port
from test_index import LOCAL, SETTINGS, create, find, found, scan, wait_for

ORDER_AVRO = json.dumps({
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": {"type": "record", "name": "Customer",
                                      "fields": [{"name": "id", "type": "string"}]}},
        {"name": "state", "type": {"type": "enum", "name": "State",
                                   "symbols": ["NEW", "PAID", "SENT"]}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "weight", "type": "float"},
    ],
})


def registry_broker(make_broker):
    """A broker (or cluster) whose every member serves the registry, with small chunks."""
    ports = {}

    def node_args(node):
        ports[node] = free_port()
        return ["--set", f"schema.registry.listen=127.0.0.1:{ports[node]}"]

    broker = make_broker(*SETTINGS, node_args=node_args)
    broker.registry_url = f"http://127.0.0.1:{ports[1]}"
    return broker


def indexed_topic(make_broker, prefix, fields):
    """A registry-serving broker, a new topic indexing `fields`, and a registry client."""
    broker = registry_broker(make_broker)
    topic = f"{prefix}-{uuid.uuid4().hex[:6]}"
    create(broker, topic, **{"index.fields": fields})
    return broker, topic, SchemaRegistryClient({"url": broker.registry_url})


def produce(broker, topic, values, serialize):
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 5,
                         "compression.type": "zstd"})
    context = SerializationContext(topic, MessageField.VALUE)
    for value in values:
        producer.produce(topic, value=serialize(value, context))
    assert producer.flush(30) == 0


def decoded(broker, topic, deserialize):
    """Every record of the topic (kafka-python, read_committed), its value decoded."""
    context = SerializationContext(topic, MessageField.VALUE)
    return [dict(r, decoded=deserialize(r["value"], context)) for r in scan(broker, topic)]


def expected(records, pick, value):
    return sorted((r["partition"], r["offset"]) for r in records if pick(r["decoded"]) == value)


def check(broker, topic, records, cases):
    """Each search (field, value) finds what the scan finds, and something."""
    for field, value, pick in cases:
        wanted = expected(records, pick, value)
        answer = find(broker, topic, **{f"field.{field}": value})
        assert found(answer) == wanted, (field, value, answer.get("scanned_bytes"))
    assert any(expected(records, pick, value) for _, value, pick in cases)


def caught_up(broker, topic, field, value):
    if LOCAL:
        wait_for(lambda: find(broker, topic, **{f"field.{field}": value})["scanned_bytes"] == 0,
                 "the index to catch up")


def test_avro_fields_are_found_as_their_deserializer_reads_them(make_broker):
    broker, topic, registry = indexed_topic(
        make_broker, "orders-avro",
        "value:$.customer.id,value:$.state,value:$.note,value:$.id,value:$.weight")
    orders = [{"id": i, "customer": {"id": f"c-{i % 11}"},
               "state": ["NEW", "PAID", "SENT"][i % 3],
               "note": None if i % 2 else f"n-{i % 5}", "weight": [0.5, 0.1, 2.0][i % 3]}
              for i in range(300)]
    produce(broker, topic, orders, AvroSerializer(registry, ORDER_AVRO))
    records = decoded(broker, topic, AvroDeserializer(registry))
    assert len(records) == len(orders)
    cases = [
        ("customer.id", "c-3", lambda o: o["customer"]["id"]),
        ("customer.id", "c-99", lambda o: o["customer"]["id"]),
        ("state", "PAID", lambda o: o["state"]),
        # A union's branch; a long as its digits; a float as it prints.
        ("note", "n-4", lambda o: o["note"]),
        ("id", "137", lambda o: str(o["id"])),
        ("weight", "0.1", lambda o: "0.1" if abs(o["weight"] - 0.1) < 1e-6 else None),
    ]
    check(broker, topic, records, cases)
    caught_up(broker, topic, "customer.id", "c-3")
    check(broker, topic, records, cases)
    # The bytes of a value are not its text: an Avro value is not read as JSON.
    assert found(find(broker, topic, **{"field.customer.id": "c-"})) == []


def order_class():
    """shop.Order as generated code would have it, built from descriptors (no protoc
    here): the second message of its file, with a nested Line message and a field of
    another file's message, so the serializer's message indexes and the schema's
    references are both read."""
    label = descriptor_pb2.FieldDescriptorProto
    item_file = descriptor_pb2.FileDescriptorProto(name="shop/item.proto", package="shop",
                                                   syntax="proto3")
    item = item_file.message_type.add(name="Item")
    item.field.add(name="sku", number=1, type=label.TYPE_STRING, label=label.LABEL_OPTIONAL)
    order_file = descriptor_pb2.FileDescriptorProto(name="shop/orders.proto", package="shop",
                                                    syntax="proto3",
                                                    dependency=["shop/item.proto"])
    order_file.message_type.add(name="Note").field.add(
        name="text", number=1, type=label.TYPE_STRING, label=label.LABEL_OPTIONAL)
    order = order_file.message_type.add(name="Order")
    line = order.nested_type.add(name="Line")
    line.field.add(name="item", number=1, type=label.TYPE_MESSAGE, type_name=".shop.Item",
                   label=label.LABEL_OPTIONAL)
    line.field.add(name="count", number=2, type=label.TYPE_INT32, label=label.LABEL_OPTIONAL)
    order.field.add(name="order_id", number=1, type=label.TYPE_INT64, label=label.LABEL_OPTIONAL)
    order.field.add(name="customer", number=2, type=label.TYPE_STRING, label=label.LABEL_OPTIONAL)
    order.field.add(name="lines", number=3, type=label.TYPE_MESSAGE,
                    type_name=".shop.Order.Line", label=label.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(item_file)
    pool.Add(order_file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def test_protobuf_fields_are_found_as_their_deserializer_reads_them(make_broker):
    broker, topic, registry = indexed_topic(
        make_broker, "orders-proto",
        "value:$.customer,value:$.lines[0].item.sku,value:$.order_id,value:$.lines[1].count")
    Order = order_class()
    orders = [Order(order_id=i, customer=f"c-{i % 7}",
                    lines=[{"item": {"sku": f"sku-{i % 9}"}, "count": 1},
                           {"item": {"sku": "x"}, "count": i % 4}][: 1 + i % 2])
              for i in range(300)]
    produce(broker, topic, orders, ProtobufSerializer(Order, registry))
    records = decoded(broker, topic, ProtobufDeserializer(Order, schema_registry_client=registry))

    def second_count(order):
        # proto3: a count of 0 is the default, and a field at its default is found.
        return str(order.lines[1].count) if len(order.lines) > 1 else None

    cases = [
        ("customer", "c-4", lambda o: o.customer),
        ("lines[0].item.sku", "sku-5", lambda o: o.lines[0].item.sku),
        ("order_id", "42", lambda o: str(o.order_id)),
        ("lines[1].count", "0", second_count),
        ("lines[1].count", "3", second_count),
    ]
    check(broker, topic, records, cases)
    caught_up(broker, topic, "customer", "c-4")
    check(broker, topic, records, cases)
