"""mTLS with real clients: an SSL listener that requires client certificates
(`ssl.client.auth=required`; the CA, the broker's and the clients' certificates made
by trustme for this run), each client's principal made of its certificate's subject by
`ssl.principal.mapping.rules`, and ACLs deciding by it. librdkafka and kafka-python
present certificates; a client without one is refused at the handshake. On one broker
and on a cluster."""

import os
import uuid

import pytest
import trustme
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)
from kafka import KafkaProducer


# "CN=alice,OU=…,O=trustme" → "alice".
RULES = "RULE:^CN=([^,]+),.*$/$1/L,DEFAULT"


@pytest.fixture
def mtls(make_broker, tmp_path):
    ca = trustme.CA()
    files = {"ca": tmp_path / "ca.pem"}
    ca.cert_pem.write_to_path(str(files["ca"]))
    for name, cert in (("server", ca.issue_cert("127.0.0.1", "localhost")),
                       ("admin", ca.issue_cert("admin.example", common_name="admin")),
                       ("alice", ca.issue_cert("alice.example", common_name="Alice"))):
        files[name] = (tmp_path / f"{name}.pem", tmp_path / f"{name}.key")
        cert.cert_chain_pems[0].write_to_path(str(files[name][0]))
        cert.private_key_pem.write_to_path(str(files[name][1]))
    broker = make_broker(
        "listeners=SSL://127.0.0.1:{port}",
        f"ssl.certificate.location={files['server'][0]}",
        f"ssl.key.location={files['server'][1]}",
        f"ssl.ca.location={files['ca']}", "ssl.client.auth=required",
        f"ssl.principal.mapping.rules={RULES}",
        "authorizer.enabled=true", "super.users=User:admin",
        # What the fixture's own clients (waiting for a cluster to form) present.
        client={"security.protocol": "SSL", "ssl.ca.location": str(files["ca"]),
                "ssl.certificate.location": str(files["admin"][0]),
                "ssl.key.location": str(files["admin"][1])})
    broker.files = files
    return broker


def librdkafka(broker, who=None):
    config = {"bootstrap.servers": broker.address, "security.protocol": "SSL",
              "ssl.ca.location": str(broker.files["ca"])}
    if who:
        certificate, key = broker.files[who]
        config.update({"ssl.certificate.location": str(certificate),
                       "ssl.key.location": str(key)})
    return config


def delivery_errors(config, topic):
    """The errors producing one record meets: in its delivery report, or at once
    when librdkafka already knows the topic refused (its metadata said so)."""
    errors = []
    producer = Producer({**config, "message.timeout.ms": 10000})
    try:
        producer.produce(topic, b"m", on_delivery=lambda err, msg: errors.append(err))
    except KafkaException as refused:
        errors.append(refused.args[0])
    producer.flush(20)
    return errors


def test_certificates_name_principals_that_acls_decide_for(mtls):
    admin = AdminClient(librdkafka(mtls, "admin"))
    topic = f"mtls-{uuid.uuid4().hex[:6]}"
    for future in admin.create_topics([NewTopic(topic, 1)]).values():
        future.result(20)
    # Alice's certificate makes her User:alice, who may not write yet.
    refused = delivery_errors(librdkafka(mtls, "alice"), topic)
    assert [e.code() for e in refused] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    binding = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL,
                         "User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW)
    for future in admin.create_acls([binding]).values():
        future.result(20)
    assert delivery_errors(librdkafka(mtls, "alice"), topic) == [None]

    # kafka-python, with the same certificate, is the same principal.
    certificate, key = mtls.files["alice"]
    producer = KafkaProducer(bootstrap_servers=mtls.address, security_protocol="SSL",
                             ssl_cafile=str(mtls.files["ca"]), ssl_certfile=str(certificate),
                             ssl_keyfile=str(key))
    assert producer.send(topic, b"from kafka-python").get(timeout=20).offset == 1
    producer.close()


def test_a_client_without_a_certificate_is_refused(mtls):
    with pytest.raises(KafkaException):
        AdminClient(librdkafka(mtls)).list_topics(timeout=5)
