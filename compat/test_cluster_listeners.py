"""A cluster whose brokers have two listeners each: PLAINTEXT, and SASL_SSL with a
SCRAM user (certificates made by trustme for this run). Each broker registers its
endpoint on every listener, so a client that bootstraps over SASL_SSL is told every
broker's SASL_SSL endpoint, and reaches partition leaders and group coordinators on
the other brokers over SASL_SSL too: confluent-kafka (librdkafka) and kafka-python
produce to and consume from a topic whose partitions are spread over the cluster.
Clusters only: one broker's listeners are in test_security.py."""

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer

from conftest import BROKERS, CLUSTER, free_port, server_certificate

pytestmark = pytest.mark.skipif(CLUSTER < 2, reason="a cluster's listeners")

USER, PASSWORD = "erin", "erin-secret"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from conftest import Broker
    tmp = str(tmp_path_factory.mktemp("listeners"))
    ca_path, cert_path, key_path = server_certificate(tmp)
    sasl_ports = {node: free_port() for node in range(1, BROKERS + 1)}
    broker = Broker(
        tmp,
        settings=["sasl.enabled.mechanisms=SCRAM-SHA-512",
                  f"ssl.certificate.location={cert_path}", f"ssl.key.location={key_path}"],
        args=["--bootstrap-user", f"{USER}:{PASSWORD}"],
        node_args=lambda node: [
            "--set",
            f"listeners=PLAINTEXT://127.0.0.1:{broker.ports[node - 1]},"
            f"SASL_SSL://127.0.0.1:{sasl_ports[node]}"],
    )
    broker.start()
    yield broker, sasl_ports, ca_path
    broker.stop()


def sasl_ssl(sasl_ports, ca_path, node=1):
    return {"bootstrap.servers": f"127.0.0.1:{sasl_ports[node]}",
            "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": USER, "sasl.password": PASSWORD, "ssl.ca.location": ca_path}


def test_metadata_over_sasl_ssl_names_every_brokers_sasl_ssl_endpoint(cluster):
    broker, sasl_ports, ca_path = cluster
    for node in sasl_ports:
        admin = AdminClient(sasl_ssl(sasl_ports, ca_path, node))
        # A broker just started may not see the last to register yet (its view follows
        # the registry every heartbeat): once a CI run listed two of four.
        deadline = time.time() + 30
        while True:
            listed = admin.list_topics(timeout=10).brokers
            ports = {b.id: b.port for b in listed.values()}
            if ports == sasl_ports or time.time() > deadline:
                break
            time.sleep(0.2)
        assert ports == sasl_ports
    plain = AdminClient({"bootstrap.servers": broker.address}).list_topics(timeout=10).brokers
    assert sorted(b.port for b in plain.values()) == sorted(broker.ports)


def test_librdkafka_reaches_leaders_and_coordinators_over_sasl_ssl(cluster):
    _, sasl_ports, ca_path = cluster
    config = sasl_ssl(sasl_ports, ca_path)
    topic = f"spread-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(config)
    admin.create_topics([NewTopic(topic, 6, 1)])[topic].result(15)
    deadline = time.time() + 20
    while True:
        partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
        leaders = {p.leader for p in partitions.values()}
        if len(leaders) == CLUSTER or time.time() > deadline:
            break
        time.sleep(0.2)
    assert len(leaders) == CLUSTER, f"leaders {leaders}: not spread over the cluster"
    producer = Producer(config)
    for i in range(60):
        producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode(), partition=i % 6)
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = set()
    deadline = time.time() + 40
    while len(got) < 60 and time.time() < deadline:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            got.add(message.value().decode())
    consumer.commit(asynchronous=False)
    consumer.close()
    assert got == {f"v{i}" for i in range(60)}


def test_kafka_python_reaches_every_leader_over_sasl_ssl(cluster):
    _, sasl_ports, ca_path = cluster
    settings = {"bootstrap_servers": f"127.0.0.1:{sasl_ports[2]}",
                "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
                "sasl_plain_username": USER, "sasl_plain_password": PASSWORD,
                "ssl_cafile": ca_path}
    topic = f"kp-spread-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(sasl_ssl(sasl_ports, ca_path))
    admin.create_topics([NewTopic(topic, 6, 1)])[topic].result(15)
    time.sleep(1)  # the controller spreads the new partitions
    producer = KafkaProducer(**settings)
    for i in range(30):
        producer.send(topic, value=f"k{i}".encode(), partition=i % 6)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest",
                             consumer_timeout_ms=10000, **settings)
    assert sorted(m.value.decode() for m in consumer) == sorted(f"k{i}" for i in range(30))
    consumer.close()
