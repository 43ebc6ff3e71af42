"""The schema registry (Confluent's REST API on schema.registry.listen), with
confluent-kafka's SchemaRegistryClient and its Avro, JSON Schema and Protobuf
serializers producing and consuming through Spool, and the API's answers read as raw HTTP. In a cluster, every
broker answers the ids any of them registered."""

import json
import subprocess
import tempfile
import urllib.error
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from conftest import BROKERS, CLUSTER, SPOOL_BIN, Broker, free_port
# The console test's browser (its page errors fail the test) and screenshots.
from test_console import browser_page, shot  # noqa: F401

USER_V1 = json.dumps({
    "type": "record", "name": "User", "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
})
USER_V2 = json.dumps({
    "type": "record", "name": "User", "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
               {"name": "email", "type": "string", "default": ""}],
})
USER_REQUIRED_PHONE = json.dumps({
    "type": "record", "name": "User", "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
               {"name": "email", "type": "string", "default": ""},
               {"name": "phone", "type": "string"}],
})


ORDER_JSON = {
    "type": "object", "title": "Order", "additionalProperties": False,
    "properties": {"id": {"type": "integer"}, "customer": {"type": "string"}},
    "required": ["id"],
}


@pytest.fixture(scope="module")
def broker():
    """A broker (or cluster) whose every member serves the registry on a port of its own."""
    registry_ports = [free_port() for _ in range(BROKERS)]
    with tempfile.TemporaryDirectory() as data_dir:
        started = Broker(data_dir, node_args=lambda node: [
            "--set", f"schema.registry.listen=127.0.0.1:{registry_ports[node - 1]}"]).start()
        started.registry_urls = [f"http://127.0.0.1:{port}" for port in registry_ports]
        yield started
        started.stop()


def http(url, method="GET", body=None):
    """(status, JSON answer) of a raw request, as any HTTP client sees it."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Content-Type": "application/vnd.schemaregistry.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def test_avro_records_go_through_spool_with_confluents_serializers(broker):
    topic = f"users-{uuid.uuid4().hex[:8]}"
    client = SchemaRegistryClient({"url": broker.registry_urls[0]})
    serialize = AvroSerializer(client, USER_V1)
    users = [{"id": i, "name": f"user-{i}"} for i in range(10)]

    def framed(user, context):
        value = serialize(user, context)
        assert value[0] == 0  # Confluent's magic byte, then the schema id.
        return value

    deserialize = AvroDeserializer(SchemaRegistryClient({"url": broker.registry_urls[-1]}))
    assert round_trip(broker, topic, framed, deserialize, users) == users
    # The subject the serializer registered, as the API shows it (on every broker).
    subject = f"{topic}-value"
    registered = client.get_latest_version(subject)
    assert registered.version == 1
    for url in broker.registry_urls:
        status, found = http(f"{url}/schemas/ids/{registered.schema_id}")
        assert status == 200 and json.loads(found["schema"])["name"] == "User", found
        assert http(f"{url}/subjects/{subject}/versions")[1] == [1]


def round_trip(broker, topic, serialize, deserialize, values):
    """Produces `values` serialized through the first broker's registry and reads them
    back deserialized through the last one's."""
    producer = Producer({"bootstrap.servers": broker.address})
    for value in values:
        producer.produce(topic, value=serialize(value, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    read = []
    while len(read) < len(values):
        message = consumer.poll(10)
        assert message is not None, f"read {len(read)} of {len(values)}"
        assert message.error() is None, message.error()
        read.append(deserialize(message.value(), SerializationContext(topic, MessageField.VALUE)))
    consumer.close()
    return read


def test_json_schema_records_go_through_spool_and_compatibility_holds(broker):
    topic = f"orders-json-{uuid.uuid4().hex[:8]}"
    first = SchemaRegistryClient({"url": broker.registry_urls[0]})
    last = SchemaRegistryClient({"url": broker.registry_urls[-1]})
    orders = [{"id": i, "customer": f"c-{i}"} for i in range(5)]
    read = round_trip(broker, topic, JSONSerializer(json.dumps(ORDER_JSON), first),
                      JSONDeserializer(None, schema_registry_client=last), orders)
    assert read == orders
    subject = f"{topic}-value"
    registered = last.get_latest_version(subject)
    assert registered.schema.schema_type == "JSON"
    # Closed content model: an optional property reads old data (BACKWARD), a
    # required one does not (409), and a type narrowed from number to integer neither.
    optional = dict(ORDER_JSON, properties=dict(ORDER_JSON["properties"], note={"type": "string"}))
    assert first.register_schema(subject, Schema(json.dumps(optional), "JSON")) != registered.schema_id
    required = dict(optional, required=["id", "note"])
    with pytest.raises(SchemaRegistryError) as refused:
        first.register_schema(subject, Schema(json.dumps(required), "JSON"))
    assert refused.value.http_status_code == 409, refused.value
    assert "REQUIRED_PROPERTY_ADDED" in str(refused.value)
    # A bad schema: 422 with Confluent's code.
    with pytest.raises(SchemaRegistryError) as invalid:
        first.register_schema(subject, Schema('{"type": "whatever"}', "JSON"))
    assert (invalid.value.http_status_code, invalid.value.error_code) == (422, 42201)


def order_class():
    """shop.Order, which imports shop.Item from another file: built from descriptors
    (no protoc here), as generated code would be."""
    item_file = descriptor_pb2.FileDescriptorProto(name="shop/item.proto", package="shop",
                                                   syntax="proto3")
    item = item_file.message_type.add(name="Item")
    item.field.add(name="sku", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                   label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    order_file = descriptor_pb2.FileDescriptorProto(name="shop/order.proto", package="shop",
                                                    syntax="proto3", dependency=["shop/item.proto"])
    order = order_file.message_type.add(name="Order")
    order.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    order.field.add(name="items", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                    type_name=".shop.Item", label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(item_file)
    pool.Add(order_file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def test_protobuf_records_go_through_spool_with_their_references(broker):
    topic = f"orders-proto-{uuid.uuid4().hex[:8]}"
    first = SchemaRegistryClient({"url": broker.registry_urls[0]})
    last = SchemaRegistryClient({"url": broker.registry_urls[-1]})
    Order = order_class()
    orders = [Order(id=i, items=[{"sku": f"sku-{i}"}]) for i in range(5)]
    # The deserializer reads the writer's schema (format=serialized) and its
    # reference from the registry.
    read = round_trip(broker, topic, ProtobufSerializer(Order, first),
                      ProtobufDeserializer(Order, schema_registry_client=last), orders)
    assert read == orders
    subject = f"{topic}-value"
    registered = last.get_latest_version(subject)
    assert registered.schema.schema_type == "PROTOBUF"
    assert [(r.name, r.subject) for r in registered.schema.references] == [
        ("shop/item.proto", "shop/item.proto")]
    # The same schema as .proto text: the same id. A field's type changed: 409.
    text = """syntax = "proto3";
        package shop;
        import "shop/item.proto";
        message Order { int64 id = 1; repeated Item items = 2; }"""
    references = registered.schema.references
    found = first.lookup_schema(subject, Schema(text, "PROTOBUF", references))
    assert found.schema_id == registered.schema_id
    with pytest.raises(SchemaRegistryError) as refused:
        first.register_schema(subject, Schema(text.replace("int64 id", "string id"), "PROTOBUF",
                                              references))
    assert refused.value.http_status_code == 409, refused.value
    assert "FIELD_SCALAR_KIND_CHANGED" in str(refused.value)
    assert http(f"{broker.registry_urls[0]}/schemas/types")[1] == ["AVRO", "JSON", "PROTOBUF"]


def test_the_same_schema_has_one_id_and_an_incompatible_one_is_refused(broker):
    client = SchemaRegistryClient({"url": broker.registry_urls[0]})
    subject = f"s-{uuid.uuid4().hex[:8]}-value"
    first = client.register_schema(subject, Schema(USER_V1, "AVRO"))
    # Written differently, the same schema: the same id.
    respaced = json.dumps(json.loads(USER_V1), indent=4)
    assert client.register_schema(subject, Schema(respaced, "AVRO")) == first
    second = client.register_schema(subject, Schema(USER_V2, "AVRO"))
    assert second != first
    assert client.get_versions(subject) == [1, 2]
    # A field added without a default breaks BACKWARD (the default level): 409.
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(USER_REQUIRED_PHONE, "AVRO"))
    assert refused.value.http_status_code == 409, refused.value
    assert not client.test_compatibility(subject, Schema(USER_REQUIRED_PHONE, "AVRO"))
    assert client.test_compatibility(subject, Schema(USER_V2, "AVRO"))
    # Under FORWARD for the subject it goes in; the registry's level stays.
    client.set_compatibility(subject, "FORWARD")
    assert client.get_compatibility(subject) == "FORWARD"
    client.register_schema(subject, Schema(USER_REQUIRED_PHONE, "AVRO"))
    assert http(f"{broker.registry_urls[-1]}/config")[1] == {"compatibilityLevel": "BACKWARD"}
    found = client.lookup_schema(subject, Schema(USER_V1, "AVRO"))
    assert (found.schema_id, found.version) == (first, 1)


def test_errors_come_with_confluents_codes_and_deletes_take_two_steps(broker):
    url = broker.registry_urls[-1]
    client = SchemaRegistryClient({"url": broker.registry_urls[0]})
    subject = f"d-{uuid.uuid4().hex[:8]}"
    status, body = http(f"{url}/subjects/{subject}/versions")
    assert (status, body["error_code"]) == (404, 40401), body
    status, body = http(f"{url}/schemas/ids/987654")
    assert (status, body["error_code"]) == (404, 40403), body
    status, body = http(f"{url}/subjects/{subject}/versions", "POST", {"schema": "{\"type\":"})
    assert (status, body["error_code"]) == (422, 42201), body
    status, body = http(f"{url}/config", "PUT", {"compatibility": "SIDEWAYS"})
    assert (status, body["error_code"]) == (422, 42203), body
    client.register_schema(subject, Schema(USER_V1, "AVRO"))
    status, body = http(f"{url}/subjects/{subject}?permanent=true", "DELETE")
    assert (status, body["error_code"]) == (404, 40405), body
    assert client.delete_subject(subject) == [1]
    assert subject not in client.get_subjects()
    status, body = http(f"{url}/subjects?deleted=true")
    assert subject in body
    assert client.delete_subject(subject, permanent=True) == [1]
    status, body = http(f"{url}/subjects?deleted=true")
    assert subject not in body
    # Read-only mode refuses registrations.
    assert http(f"{url}/mode/{subject}", "PUT", {"mode": "READONLY"})[0] == 200
    status, body = http(f"{url}/subjects/{subject}/versions", "POST", {"schema": USER_V1})
    assert (status, body["error_code"]) == (422, 42205), body
    assert http(f"{url}/mode/{subject}", "DELETE")[0] == 200
    # A subject without a mode of its own: 40409, unless the registry's is asked for.
    status, body = http(f"{url}/mode/{subject}")
    assert (status, body["error_code"]) == (404, 40409), body
    assert http(f"{url}/mode/{subject}?defaultToGlobal=true") == (200, {"mode": "READWRITE"})
    # A mode that does not exist: 42204.
    status, body = http(f"{url}/mode/{subject}", "PUT", {"mode": "SIDEWAYS"})
    assert (status, body["error_code"]) == (422, 42204), body
    # Clients that send "references": null are read as sending none.
    status, body = http(f"{url}/subjects/{subject}/versions", "POST",
                        {"schema": USER_V1, "references": None})
    assert status == 200, body


def test_the_cli_registers_reads_checks_lists_and_deletes(broker, tmp_path):
    url = broker.registry_urls[0]
    subject = f"cli-{uuid.uuid4().hex[:8]}-value"
    (tmp_path / "v1.avsc").write_text(USER_V1)
    (tmp_path / "phone.avsc").write_text(USER_V2.replace(
        '"default": ""}]', '"default": ""}, {"name": "phone", "type": "string"}]'))
    (tmp_path / "v2.avsc").write_text(USER_V2)

    def spool(*args):
        done = subprocess.run([SPOOL_BIN, "schema", *args, "--registry-url", url],
                              capture_output=True, text=True, timeout=60)
        return done.returncode, done.stdout, done.stderr

    code, out, err = spool("register", subject, "--file", str(tmp_path / "v1.avsc"))
    assert code == 0 and "version 1, id" in out, (out, err)
    code, out, _ = spool("get", subject)
    assert code == 0 and "version: 1" in out and '"User"' in out, out
    assert spool("compat", subject, "--file", str(tmp_path / "v2.avsc"))[0] == 0
    code, _, err = spool("compat", subject, "--file", str(tmp_path / "phone.avsc"))
    assert code == 1 and "not compatible" in err, err
    code, _, err = spool("register", subject, "--file", str(tmp_path / "phone.avsc"))
    assert code == 1 and "incompatible" in err, err
    assert subject in spool("list")[1].split()
    code, _, err = spool("get", "nobody-value")
    assert code == 3 and "not found" in err, err
    code, _, err = spool("delete", subject, "--permanent")
    assert code == 1 and "not deleted first" in err, err
    assert spool("delete", subject)[0] == 0
    assert subject not in spool("list")[1].split()
    assert subject in spool("list", "--deleted")[1].split()
    assert spool("delete", subject, "--permanent")[0] == 0


def test_a_validating_topic_refuses_records_without_a_registered_id(broker):
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"validated-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic(topic, 1, config={
        "confluent.value.schema.validation": "true"})])[topic].result(30)
    client = SchemaRegistryClient({"url": broker.registry_urls[0]})
    serialize = AvroSerializer(client, USER_V1)
    context = SerializationContext(topic, MessageField.VALUE)
    good = serialize({"id": 1, "name": "ada"}, context)
    other_subject = client.register_schema(f"other-{topic}", Schema(USER_V2, "AVRO"))
    unregistered = b"\x00" + other_subject.to_bytes(4, "big") + good[5:]
    # One producer per record: a refused batch fails every record in it.
    outcomes = {}
    for name, value in [("good", good), ("plain", b"not framed"), ("unregistered", unregistered),
                        ("tombstone", None)]:
        producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 0})
        producer.produce(topic, key=name.encode(), value=value,
                         on_delivery=lambda err, msg, name=name: outcomes.update({name: err}))
        assert producer.flush(30) == 0
    assert outcomes["good"] is None and outcomes["tombstone"] is None, outcomes
    for name in ["plain", "unregistered"]:
        assert outcomes[name] is not None and outcomes[name].code() == KafkaError.INVALID_RECORD, outcomes
    # kafka-python, a client of its own, gets the refusal too (and its good record in).
    from kafka import KafkaProducer
    from kafka.errors import InvalidRecordError

    python_producer = KafkaProducer(bootstrap_servers=broker.address, retries=0)
    with pytest.raises(InvalidRecordError):
        python_producer.send(topic, key=b"python-plain", value=b"not framed").get(timeout=30)
    python_producer.send(topic, key=b"python-good", value=good).get(timeout=30)
    python_producer.close()
    # Only the accepted records are in the log.
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    consumer.subscribe([topic])
    keys = []
    while True:
        message = consumer.poll(10)
        assert message is not None
        if message.error() and message.error().code() == KafkaError._PARTITION_EOF:
            break
        keys.append(message.key())
    consumer.close()
    assert keys == [b"good", b"tombstone", b"python-good"]


def test_a_secured_registry_takes_scram_logins_over_tls_and_checks_acls(make_broker, tmp_path):
    """With SASL listeners and ACLs: HTTP Basic with SCRAM users, over TLS with the
    broker's certificate (schema.registry.listen=https://…). Anyone who logs in reads;
    registering under TOPIC-value needs WRITE on TOPIC, other subjects ALTER on the
    cluster; super users do anything."""
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType,
                                       AdminClient, ResourcePatternType, ResourceType,
                                       ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)
    from conftest import server_certificate

    ca, certificate, key = server_certificate(str(tmp_path))
    admin_sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                  "sasl.username": "admin", "sasl.password": "admin-secret"}
    ports = [free_port() for _ in range(BROKERS)]
    broker = make_broker(
        "listeners=SASL_PLAINTEXT://127.0.0.1:{port}", "authorizer.enabled=true",
        "super.users=User:admin", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
        f"ssl.certificate.location={certificate}", f"ssl.key.location={key}",
        args=["--bootstrap-user", "admin:admin-secret"], client=admin_sasl,
        node_args=lambda node: ["--set", f"schema.registry.listen=https://127.0.0.1:{ports[node - 1]}"])
    admin = AdminClient({"bootstrap.servers": broker.address, **admin_sasl})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    for future in admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("alice", info, b"alice-secret")]).values():
        future.result(20)

    def client(login, url=f"https://127.0.0.1:{ports[-1]}"):
        config = {"url": url, "ssl.ca.location": ca}
        if login:
            config["basic.auth.user.info"] = login
        return SchemaRegistryClient(config)

    topic = f"secured-{uuid.uuid4().hex[:8]}"
    schema = Schema(USER_V1, "AVRO")
    first = client("admin:admin-secret", f"https://127.0.0.1:{ports[0]}")
    schema_id = first.register_schema(f"{topic}-value", schema)
    for login in [None, "admin:wrong", "nobody:x"]:
        with pytest.raises(SchemaRegistryError) as refused:
            client(login).get_subjects()
        assert refused.value.http_status_code == 401, (login, refused.value)
    alice = client("alice:alice-secret")
    assert alice.get_schema(schema_id).schema_str == first.get_schema(schema_id).schema_str
    for subject in [f"{topic}-value", f"other-{topic}"]:
        with pytest.raises(SchemaRegistryError) as refused:
            alice.register_schema(subject, Schema(USER_V2, "AVRO"))
        assert refused.value.http_status_code == 403, refused.value
    with pytest.raises(SchemaRegistryError) as refused:
        alice.set_compatibility(level="NONE")
    assert refused.value.http_status_code == 403
    binding = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice",
                         "*", AclOperation.WRITE, AclPermissionType.ALLOW)
    for future in admin.create_acls([binding]).values():
        future.result(20)
    assert alice.register_schema(f"{topic}-value", Schema(USER_V2, "AVRO")) != schema_id
    # Plain HTTP to the TLS listener gets no answer.
    with pytest.raises(Exception):
        urllib.request.urlopen(f"http://127.0.0.1:{ports[0]}/subjects", timeout=5)


def test_the_console_shows_subjects_versions_and_a_schema(broker, browser_page):
    from playwright.sync_api import expect

    client = SchemaRegistryClient({"url": broker.registry_urls[0]})
    subject = f"console-{uuid.uuid4().hex[:8]}-value"
    first = client.register_schema(subject, Schema(USER_V1, "AVRO"))
    second = client.register_schema(subject, Schema(USER_V2, "AVRO"))
    page = browser_page
    page.set_default_timeout(20000)
    page.goto(broker.admin_url_of(CLUSTER) + "/")
    page.click("a[data-nav=schemas]")
    expect(page.locator("h1")).to_have_text("Schemas")
    row = page.locator("table tbody tr", has_text=subject)
    expect(row).to_contain_text("AVRO")
    expect(row).to_contain_text("1, 2")
    expect(row).to_contain_text(str(second))
    row.locator("a").click()
    expect(page.locator("h1")).to_have_text(subject)
    expect(page.locator("h2")).to_contain_text(f"schema id {second}")
    expect(page.locator("pre.schema")).to_contain_text('"email"')
    shot(page, "schema")
    page.locator("a", has_text="1").first.click()
    expect(page.locator("h2")).to_contain_text(f"Version 1 · schema id {first}")
    expect(page.locator("pre.schema")).not_to_contain_text('"email"')


def test_import_mode_keeps_the_ids_another_registry_gave(broker):
    base = broker.registry_urls[0]
    run = uuid.uuid4().hex[:8]
    subject = f"imported-{run}-value"
    versions = f"{base}/subjects/{subject}/versions"
    # Schemas of this test only (one schema has one id here).
    user_v1 = USER_V1.replace('"shop"', f'"imported{run}"')
    user_v2 = USER_V2.replace('"shop"', f'"imported{run}"')
    status, answer = http(versions, "POST", {"schema": user_v1, "id": 7001})
    assert (status, answer["error_code"]) == (422, 42205), answer
    assert http(f"{base}/mode/{subject}", "PUT", {"mode": "IMPORT"}) == (200, {"mode": "IMPORT"})
    status, answer = http(versions, "POST", {"schema": user_v1, "id": 7001, "version": 3})
    assert (status, answer["id"]) == (200, 7001), answer
    for url in broker.registry_urls:
        status, found = http(f"{url}/schemas/ids/7001")
        assert status == 200 and json.loads(found["schema"])["name"] == "User", found
        assert http(f"{url}/subjects/{subject}/versions")[1] == [3]
    # The id holds another schema: refused.
    status, answer = http(versions, "POST", {"schema": user_v2, "id": 7001})
    assert (status, answer["error_code"]) == (422, 42205), answer
    # Back to READWRITE, a new schema's id comes after the imported one.
    assert http(f"{base}/mode/{subject}", "PUT", {"mode": "READWRITE"})[0] == 200
    client = SchemaRegistryClient({"url": broker.registry_urls[-1]})
    registered = client.register_schema_full_response(subject, Schema(user_v2, "AVRO"))
    assert registered.schema_id > 7001 and registered.version == 4, registered
    # IMPORT where versions exist needs force=true.
    status, answer = http(f"{base}/mode/{subject}", "PUT", {"mode": "IMPORT"})
    assert (status, answer["error_code"]) == (422, 42205), answer
    assert http(f"{base}/mode/{subject}?force=true", "PUT", {"mode": "IMPORT"})[0] == 200
