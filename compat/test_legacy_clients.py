"""Clients older than Kafka 4's floor (KIP-896): the API versions Kafka 3.9 served
and Kafka 4 removed — Produce v0–v2 with message formats v0/v1, Fetch v0–v3 reading
them, ListOffsets v0, OffsetCommit v0–v1, OffsetFetch v0 — are served by converting
them (docs/api-coverage.md#versions-kafka-4-removed). Debian's sarama 1.22 (Go, 2019)
and kafka-python with an old `api_version` produce, consume, join a group and commit;
what they write, a current client (librdkafka) reads, and what a current client
writes, they read."""

import os
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SARAMA_CHECK = os.path.join(ROOT, "target", "go", "sarama_check")


@pytest.fixture(scope="module")
def sarama_check():
    """compat/go/sarama_check.go built against Debian's sarama (GOPATH mode)."""
    out = os.path.join(ROOT, "target", "go")
    env = dict(os.environ, GO111MODULE="off", GOPATH="/usr/share/gocode",
               GOCACHE=os.path.join(out, "cache"), GOFLAGS="")
    subprocess.run(["go", "build", "-o", SARAMA_CHECK,
                    os.path.join(ROOT, "compat", "go", "sarama_check.go")],
                   env=env, check=True, capture_output=True, timeout=600)
    return SARAMA_CHECK


def create(broker, topic, partitions=1):
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(15)


def read_librdkafka(broker, topic, count):
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": f"r-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    read = []
    deadline = time.time() + 30
    while len(read) < count and time.time() < deadline:
        message = consumer.poll(1)
        if message is not None and message.error() is None:
            read.append((message.offset(), message.key(), message.value(),
                         message.timestamp()[1]))
    consumer.close()
    return sorted(read)


@pytest.mark.parametrize("version,compression", [
    ("0.8.2.0", "none"),     # Produce v0, message format v0
    ("0.8.2.0", "gzip"),     # a compressed v0 wrapper
    ("0.10.0.0", "snappy"),  # Produce v2, format v1, compressed
    ("0.10.0.0", "lz4"),
    ("1.0.0", "gzip"),       # Produce v3+: format v2, as today
])
def test_sarama_1_22_produces_consumes_and_commits(broker, sarama_check, version, compression):
    import json
    topic = f"sarama-{uuid.uuid4().hex[:6]}"
    group = f"g-{topic}"
    create(broker, topic)
    run = subprocess.run([sarama_check, broker.address, topic, group, version, compression, "6"],
                         capture_output=True, text=True, timeout=120)
    steps = {s["step"]: s for s in map(json.loads, run.stdout.splitlines())}
    assert run.returncode == 0, (run.stdout, run.stderr[-2000:])
    assert steps["produced"]["offsets"] == list(range(6))
    # The partition consumer reads at sarama's default version: Fetch v0, format v0.
    assert steps["consumed"]["records"] == [f"{i}:k{i}=v{i}" for i in range(6)]
    assert steps["group"]["values"] == [f"v{i}" for i in range(6)]
    # Its OffsetCommit v1 was taken, and OffsetFetch v1 reads it back.
    assert steps["committed"]["next"] == 6
    # A current client reads what sarama wrote.
    read = read_librdkafka(broker, topic, 6)
    assert [(o, k, v) for o, k, v, _ in read] == \
        [(i, f"k{i}".encode(), f"v{i}".encode()) for i in range(6)]


@pytest.mark.parametrize("api_version,compression", [
    ((0, 9), None),       # Produce v1 (format v0), Fetch v1, OffsetCommit v2
    ((0, 10), "gzip"),    # Produce v2 (format v1, timestamps), Fetch v2-v3
    ((0, 10, 1), "lz4"),  # ListOffsets v1
    ((0, 11), "snappy"),  # format v2 as today
])
def test_kafka_python_at_old_api_versions(broker, api_version, compression):
    topic = f"kp-old-{uuid.uuid4().hex[:6]}"
    group = f"g-{topic}"
    create(broker, topic, partitions=2)
    producer = KafkaProducer(bootstrap_servers=broker.address, api_version=api_version,
                             compression_type=compression, linger_ms=20)
    stamp = int(time.time() * 1000) - 60_000
    for i in range(20):
        producer.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 2,
                      timestamp_ms=stamp + i)
    producer.flush(30)
    producer.close()
    # A current producer's records (headers and all) read by the old client too.
    current = Producer({"bootstrap.servers": broker.address})
    current.produce(topic, key=b"new", value=b"from librdkafka", partition=0,
                    headers=[("h", b"dropped for formats v0/v1")])
    current.flush(30)
    consumer = KafkaConsumer(topic, bootstrap_servers=broker.address, api_version=api_version,
                             group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=8000)
    read = {}
    for message in consumer:
        read[(message.partition, message.key)] = (message.value, message.timestamp)
        if len(read) == 21:
            break
    assert len(read) == 21, sorted(read)
    assert read[(0, b"new")][0] == b"from librdkafka"
    for i in range(20):
        value, timestamp = read[(i % 2, f"k{i}".encode())]
        assert value == f"v{i}".encode()
        if api_version >= (0, 10):
            # Format v1 carries the producer's timestamp both ways.
            assert timestamp == stamp + i
    partitions = [TopicPartition(topic, p) for p in range(2)]
    consumer.commit({tp: OffsetAndMetadata(5, "", -1) for tp in partitions})
    assert [consumer.committed(tp) for tp in partitions] == [5, 5]
    consumer.close()
    # The old client's records, read by a current one, keep their timestamps (format
    # v0 has none: -1, as Kafka up-converts them).
    read = read_librdkafka(broker, topic, 21)
    assert len(read) == 21
    stamps = sorted(t for _, k, _, t in read if k != b"new")
    assert stamps == ([stamp + i for i in range(20)] if api_version >= (0, 10) else [-1] * 20)
