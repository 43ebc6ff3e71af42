"""Compacted topics with real clients: the cleaner keeps the latest value of each key
(tombstones delete keys), offsets never change and readers skip the gaps; records
without a key are refused with INVALID_RECORD."""

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KPTopicPartition
from kafka.errors import InvalidRecordError

# A cleaner that looks every 200 ms; topics with small segments and any dirt due.
SETTINGS = ("log.cleaner.backoff.ms=200",)
COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01",
             "delete.retention.ms": "100"}


def create(broker, topic, config):
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(timeout=10)


def read_all_kafka_python(broker, topic):
    consumer = KafkaConsumer(bootstrap_servers=broker.address, consumer_timeout_ms=3000,
                             enable_auto_commit=False)
    partition = KPTopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    end = consumer.end_offsets([partition])[partition]
    records = []
    for record in consumer:
        records.append((record.offset, record.key, record.value))
        if record.offset >= end - 1:
            break
    consumer.close()
    return records


def read_all_librdkafka(broker, topic):
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "reader",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    records = []
    deadline = time.time() + 30
    while time.time() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error():
            if message.error().code() == KafkaError._PARTITION_EOF:
                break
            raise AssertionError(message.error())
        records.append((message.offset(), message.key(), message.value()))
    consumer.close()
    return records


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_the_cleaner_keeps_the_latest_value_of_each_key(make_broker, codec):
    broker = make_broker(*SETTINGS)
    topic = f"table-{codec}"
    create(broker, topic, COMPACTED)
    producer = Producer({"bootstrap.servers": broker.address, "compression.type": codec,
                         "linger.ms": 0, "acks": "all"})
    latest = {}
    for version in range(40):
        for k in range(10):
            key = f"k{k}".encode()
            value = None if (k == 9 and version == 39) else f"k{k}-v{version}-".encode() * 4
            producer.produce(topic, key=key, value=value)
            latest[key] = value
        producer.flush(10)
    # kafka-python writes too, then a few more records roll the last segment closed.
    kp = KafkaProducer(bootstrap_servers=broker.address)
    for k in range(3):
        key = f"k{k}".encode()
        latest[key] = b"from kafka-python"
        kp.send(topic, key=key, value=latest[key]).get(timeout=10)
    for n in range(30):
        kp.send(topic, key=b"filler", value=b"x" * 100).get(timeout=10)
        latest[b"filler"] = b"x" * 100
    kp.close()
    total = 40 * 10 + 3 + 30

    deadline = time.time() + 60
    while time.time() < deadline:
        records = read_all_kafka_python(broker, topic)
        if len(records) < total // 4:
            break
        time.sleep(0.5)
    assert len(records) < total // 4, f"not compacted: {len(records)} of {total}"
    for records in (read_all_kafka_python(broker, topic), read_all_librdkafka(broker, topic)):
        offsets = [offset for offset, _, _ in records]
        assert offsets == sorted(set(offsets)), "offsets increase"
        assert offsets[-1] == total - 1, "the last record keeps its offset"
        seen = {}
        for _, key, value in records:
            seen[key] = value
        # Every key reads as its latest value; the deleted key is gone or a tombstone.
        for key, value in latest.items():
            if value is None:
                assert seen.get(key) is None, key
            else:
                assert seen[key] == value, key


def test_records_without_a_key_are_refused_by_a_compacted_topic(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "keys-only", COMPACTED)
    producer = Producer({"bootstrap.servers": broker.address})
    outcomes = []
    # The whole batch goes with its keyless record: send them apart.
    producer.produce("keys-only", value=b"no key", on_delivery=lambda err, msg: outcomes.append(err))
    producer.flush(10)
    producer.produce("keys-only", key=b"k", value=b"keyed", on_delivery=lambda err, msg: outcomes.append(err))
    producer.flush(10)
    assert outcomes[0] is not None and outcomes[0].code() == KafkaError.INVALID_RECORD, outcomes
    assert outcomes[1] is None, outcomes
    # acks=all: a write is visible to readers once it is committed, which acks=1
    # does not wait for (in shared-storage mode, the commit follows the flush).
    kp = KafkaProducer(bootstrap_servers=broker.address, retries=0, acks="all")
    with pytest.raises(InvalidRecordError):
        kp.send("keys-only", value=b"no key either").get(timeout=10)
    kp.send("keys-only", key=b"k2", value=b"fine").get(timeout=10)
    kp.close()
    assert [key for _, key, _ in read_all_kafka_python(broker, "keys-only")] == [b"k", b"k2"]
