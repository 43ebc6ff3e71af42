"""ACLs with real clients, on one broker or a cluster: every broker listens with
SASL_PLAINTEXT only and enforces ACLs (`authorizer.enabled=true`); `admin` is a super
user seeded with `--bootstrap-user`, and makes the user `alice` over KIP-554.
confluent-kafka (librdkafka) and kafka-python manage bindings with their admin APIs and
see their clients refused until a binding allows them; kcat lists only the topics alice
may describe. A grant made through one broker applies on every broker before the
admin call returns (in a cluster, produce right after it reaches every leader)."""

import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation,
                                   AclPermissionType, AdminClient, NewTopic,
                                   ResourcePatternType, ResourceType, ScramCredentialInfo,
                                   ScramMechanism, UserScramCredentialUpsertion)

from conftest import kcat

ADMIN = ("admin", "admin-secret")
ALICE = ("alice", "alice-secret")


def sasl(user):
    name, password = user
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
            "sasl.username": name, "sasl.password": password}


@pytest.fixture
def secured(make_broker):
    return make_broker(
        "listeners=SASL_PLAINTEXT://127.0.0.1:{port}",
        "authorizer.enabled=true", "super.users=User:admin",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
        args=["--bootstrap-user", f"{ADMIN[0]}:{ADMIN[1]}"],
        client=sasl(ADMIN))


def admin_of(broker):
    return AdminClient({"bootstrap.servers": broker.address, **sasl(ADMIN)})


def wait(futures):
    return {key: future.result(20) for key, future in futures.items()}


def make_alice(admin):
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    wait(admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion(ALICE[0], info, ALICE[1].encode())]))


def allow(resource, name, operation, pattern=ResourcePatternType.LITERAL):
    return AclBinding(resource, name, pattern, "User:alice", "*", operation,
                      AclPermissionType.ALLOW)


def produce(broker, user, topic, count):
    """Sends `count` messages over every partition; the delivery errors."""
    errors = []
    producer = Producer({"bootstrap.servers": broker.address, **sasl(user),
                         "message.timeout.ms": 15000})
    for i in range(count):
        producer.produce(topic, f"m{i}".encode(), partition=i % 3,
                         on_delivery=lambda err, msg: errors.append(err) if err else None)
    producer.flush(30)
    return errors


def test_librdkafka_is_refused_until_granted_and_grants_apply_everywhere_at_once(secured):
    admin = admin_of(secured)
    make_alice(admin)
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    wait(admin.create_topics([NewTopic(topic, 3)]))

    errors = produce(secured, ALICE, topic, 3)
    assert errors and all(e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED for e in errors)

    wait(admin.create_acls([allow(ResourceType.TOPIC, topic, AclOperation.WRITE)]))
    # At once, on every partition's leader (each broker of a cluster leads one).
    assert produce(secured, ALICE, topic, 30) == []

    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": secured.address, **sasl(ALICE),
                         "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    refused = None
    for _ in range(40):
        message = consumer.poll(0.5)
        if message is not None and message.error():
            refused = message.error().code()
            break
    consumer.close()
    assert refused in (KafkaError.GROUP_AUTHORIZATION_FAILED,
                       KafkaError.TOPIC_AUTHORIZATION_FAILED)

    wait(admin.create_acls([allow(ResourceType.TOPIC, topic, AclOperation.READ),
                            allow(ResourceType.GROUP, "g-", AclOperation.READ,
                                  ResourcePatternType.PREFIXED)]))
    consumer = Consumer({"bootstrap.servers": secured.address, **sasl(ALICE),
                         "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    received = []
    for _ in range(120):
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            received.append(message.value())
        if len(received) == 30:
            break
    consumer.close()
    assert len(received) == 30

    described = admin.describe_acls(AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None,
        AclOperation.ANY, AclPermissionType.ANY)).result(20)
    assert len(described) == 3
    deleted = admin.delete_acls([AclBindingFilter(
        ResourceType.TOPIC, topic, ResourcePatternType.MATCH, None, None,
        AclOperation.ANY, AclPermissionType.ANY)])
    assert sum(len(bindings) for bindings in wait(deleted).values()) == 2
    errors = produce(secured, ALICE, topic, 3)
    assert errors and all(e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED for e in errors)


def test_alice_may_not_manage_acls_or_users(secured):
    admin = admin_of(secured)
    make_alice(admin)
    alice = AdminClient({"bootstrap.servers": secured.address, **sasl(ALICE)})
    with pytest.raises(KafkaException) as refused:
        wait(alice.create_acls([allow(ResourceType.TOPIC, "t", AclOperation.READ)]))
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    # librdkafka drops DescribeAcls' top-level error (CLUSTER_AUTHORIZATION_FAILED,
    # checked by the raw-socket and kafka-python tests): alice sees no binding.
    wait(admin.create_acls([allow(ResourceType.TOPIC, "t", AclOperation.READ)]))
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None,
                                  None, AclOperation.ANY, AclPermissionType.ANY)
    assert len(admin.describe_acls(everything).result(20)) == 1
    assert alice.describe_acls(everything).result(20) == []
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    with pytest.raises(KafkaException):
        wait(alice.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("mallory", info, b"x")]))


def test_kafka_python_manages_acls_and_is_refused(secured):
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType,
                             ACLResourcePatternType, ResourcePattern, ResourcePatternFilter)
    from kafka.admin import ResourceType as KafkaResource
    from kafka.errors import (ClusterAuthorizationFailedError, KafkaTimeoutError,
                              TopicAuthorizationFailedError)

    make_alice(admin_of(secured))
    def client_config(user):
        return {"bootstrap_servers": secured.address, "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "PLAIN", "sasl_plain_username": user[0],
                "sasl_plain_password": user[1]}
    admin = KafkaAdminClient(**client_config(ADMIN))
    topic = f"kp-{uuid.uuid4().hex[:6]}"
    from kafka.admin import NewTopic as KafkaNewTopic
    admin.create_topics([KafkaNewTopic(topic, 1, 1)])

    alice_admin = KafkaAdminClient(**client_config(ALICE))
    with pytest.raises(ClusterAuthorizationFailedError):
        alice_admin.describe_acls(ACLFilter(
            principal=None, host=None, operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(KafkaResource.ANY, None,
                                                   ACLResourcePatternType.ANY)))
    alice_admin.close()

    producer = KafkaProducer(**client_config(ALICE), max_block_ms=5000)
    with pytest.raises((TopicAuthorizationFailedError, KafkaTimeoutError)):
        producer.send(topic, b"refused").get(timeout=10)
    producer.close()

    acl = ACL(principal="User:alice", host="*", operation=ACLOperation.WRITE,
              permission_type=ACLPermissionType.ALLOW,
              resource_pattern=ResourcePattern(KafkaResource.TOPIC, "kp-",
                                               ACLResourcePatternType.PREFIXED))
    result = admin.create_acls([acl])
    assert result["failed"] == [] and len(result["succeeded"]) == 1
    acls, error = admin.describe_acls(ACLFilter(
        principal="User:alice", host=None, operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(KafkaResource.ANY, None,
                                               ACLResourcePatternType.ANY)))
    assert error.errno == 0 and [a.resource_pattern.resource_name for a in acls] == ["kp-"]

    producer = KafkaProducer(**client_config(ALICE), max_block_ms=10000)
    metadata = producer.send(topic, b"allowed").get(timeout=20)
    assert metadata.offset == 0
    producer.close()

    deleted = admin.delete_acls([ACLFilter(
        principal="User:alice", host=None, operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(KafkaResource.TOPIC, "kp-",
                                               ACLResourcePatternType.PREFIXED))])
    assert len(deleted[0][1]) == 1
    admin.close()


def test_kcat_lists_only_the_topics_alice_may_describe(secured):
    admin = admin_of(secured)
    make_alice(admin)
    seen, hidden = f"seen-{uuid.uuid4().hex[:6]}", f"hidden-{uuid.uuid4().hex[:6]}"
    wait(admin.create_topics([NewTopic(seen, 1), NewTopic(hidden, 1)]))
    wait(admin.create_acls([allow(ResourceType.TOPIC, seen, AclOperation.DESCRIBE)]))
    listed = kcat("-b", secured.address, "-X", "security.protocol=SASL_PLAINTEXT",
                  "-X", "sasl.mechanisms=PLAIN", "-X", f"sasl.username={ALICE[0]}",
                  "-X", f"sasl.password={ALICE[1]}", "-L").decode()
    assert seen in listed and hidden not in listed


def test_a_regular_expression_matches_only_topics_alice_may_describe(secured):
    """KIP-848's broker-side regular expressions: a consumer-protocol member is
    assigned only the matching topics its principal may DESCRIBE, as in Kafka."""
    import time
    admin = admin_of(secured)
    make_alice(admin)
    suffix = uuid.uuid4().hex[:6]
    visible, hidden = f"rx{suffix}-visible", f"rx{suffix}-hidden"
    wait(admin.create_topics([NewTopic(visible, 2, 1), NewTopic(hidden, 2, 1)]))
    group = f"rx-{suffix}"
    wait(admin.create_acls([allow(ResourceType.GROUP, group, AclOperation.READ),
                            allow(ResourceType.TOPIC, visible, AclOperation.READ)]))
    consumer = Consumer({"bootstrap.servers": secured.address, **sasl(ALICE),
                         "group.id": group, "group.protocol": "consumer",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([f"^rx{suffix}-.*"])
        deadline = time.time() + 30
        while not consumer.assignment() and time.time() < deadline:
            consumer.poll(0.2)
        time.sleep(1)
        consumer.poll(0.2)
        assert {tp.topic for tp in consumer.assignment()} == {visible}
        assert {tp.partition for tp in consumer.assignment()} == {0, 1}
    finally:
        consumer.close()
