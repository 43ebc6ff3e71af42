"""Topics, produce, fetch and list offsets with three independent clients."""

import json
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KPTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KPNewTopic

from conftest import CLUSTER, kcat


def create(broker, name, partitions=1, config=None):
    admin = AdminClient({"bootstrap.servers": broker.address})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])
    futures[name].result(timeout=10)


def test_metadata_from_kcat_librdkafka_and_kafka_python(broker):
    # Every broker, once each renewed its lease since the others read them (on a
    # loaded CI machine a broker's renewal can come late, and it is missing a moment).
    deadline = time.time() + 10
    while True:
        listed = json.loads(kcat("-b", broker.address, "-L", "-J"))
        names = sorted(b["name"] for b in listed["brokers"])
        if names == sorted(broker.addresses) or time.time() > deadline:
            break
        time.sleep(0.2)
    assert names == sorted(broker.addresses)
    create(broker, "meta", 3)
    metadata = AdminClient({"bootstrap.servers": broker.address}).list_topics(timeout=10)
    assert len(metadata.topics["meta"].partitions) == 3
    consumer = KafkaConsumer(bootstrap_servers=broker.address)
    assert consumer.partitions_for_topic("meta") == {0, 1, 2}
    consumer.close()


def test_create_topics_validates_and_refuses_duplicates(broker):
    admin = AdminClient({"bootstrap.servers": broker.address})
    ok = admin.create_topics([NewTopic("configured", 4, 1, config={"retention.ms": "3600000", "segment.bytes": "1048576"})])
    ok["configured"].result(timeout=10)
    dup = admin.create_topics([NewTopic("configured", 1, 1)])
    with pytest.raises(KafkaException) as error:
        dup["configured"].result(timeout=10)
    assert error.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    bad = admin.create_topics([NewTopic("bad-config", 1, 1, config={"no.such.config": "1"})])
    with pytest.raises(KafkaException) as error:
        bad["bad-config"].result(timeout=10)
    assert error.value.args[0].code() == KafkaError.INVALID_CONFIG
    # More copies than brokers can hold them (a cluster holds one per writer).
    replicated = admin.create_topics([NewTopic("replicated", 1, CLUSTER + 1)])
    with pytest.raises(KafkaException) as error:
        replicated["replicated"].result(timeout=10)
    assert error.value.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR
    only = admin.create_topics([NewTopic("validated", 2, 1)], validate_only=True)
    only["validated"].result(timeout=10)
    assert "validated" not in admin.list_topics(timeout=10).topics

    kp_admin = KafkaAdminClient(bootstrap_servers=broker.address)
    kp_admin.create_topics([KPNewTopic("from-kafka-python", 2, 1)])
    assert len(admin.list_topics(timeout=10).topics["from-kafka-python"].partitions) == 2
    kp_admin.close()


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_confluent_produces_kafka_python_consumes(broker, codec):
    topic = f"codec-{codec}"
    create(broker, topic, 2)
    producer = Producer({"bootstrap.servers": broker.address, "compression.type": codec, "acks": "all", "linger.ms": 5})
    sent = []
    for i in range(200):
        key = f"key-{i}".encode()
        value = None if i % 50 == 7 else f"value-{i}".encode() * (i % 5 + 1)
        headers = [("h", f"{i}".encode())]
        producer.produce(topic, key=key, value=value, headers=headers, partition=i % 2)
        sent.append((i % 2, key, value, headers))
    assert producer.flush(10) == 0
    consumer = KafkaConsumer(bootstrap_servers=broker.address, auto_offset_reset="earliest", consumer_timeout_ms=5000)
    consumer.assign([KPTopicPartition(topic, 0), KPTopicPartition(topic, 1)])
    consumer.seek_to_beginning()
    got = []
    for record in consumer:
        got.append((record.partition, record.key, record.value, [(k, v) for k, v in record.headers]))
        if len(got) == len(sent):
            break
    consumer.close()
    for partition in (0, 1):
        assert [g for g in got if g[0] == partition] == [s for s in sent if s[0] == partition]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_kafka_python_produces_confluent_consumes(broker, codec):
    topic = f"kp-{codec}"
    create(broker, topic, 1)
    producer = KafkaProducer(bootstrap_servers=broker.address, compression_type=codec, acks="all")
    values = [f"message-{i}".encode() for i in range(100)]
    for value in values:
        producer.send(topic, key=b"k", value=value)
    producer.flush()
    producer.close()
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.time() + 15
    while len(got) < len(values) and time.time() < deadline:
        message = consumer.poll(1)
        if message is not None and not message.error():
            got.append(message.value())
    consumer.close()
    assert got == values


def test_large_messages_and_message_too_large(broker):
    create(broker, "big", 1, {"max.message.bytes": str(2 * 1024 * 1024)})
    create(broker, "small", 1)
    producer = Producer({"bootstrap.servers": broker.address, "message.max.bytes": 4 * 1024 * 1024, "acks": "all"})
    one_mib = bytes(range(256)) * 4096
    producer.produce("big", value=one_mib)
    assert producer.flush(10) == 0
    errors = []
    producer.produce("small", value=one_mib * 2, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert errors and errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
    out = kcat("-b", broker.address, "-C", "-t", "big", "-o", "beginning", "-e", "-c", "1", "-f", "%S")
    assert out == str(len(one_mib)).encode()


def test_many_messages_across_partitions_stay_in_order(broker):
    topic = "bulk"
    create(broker, topic, 8)
    producer = Producer({"bootstrap.servers": broker.address, "acks": "all", "linger.ms": 20, "batch.num.messages": 10000})
    count = 100_000
    for i in range(count):
        producer.produce(topic, value=b"%d" % i, partition=i % 8)
        if i % 10000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "unused", "enable.auto.commit": False, "fetch.max.bytes": 4 * 1024 * 1024})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(8)])
    last = {p: -1 for p in range(8)}
    seen = 0
    deadline = time.time() + 60
    while seen < count and time.time() < deadline:
        for message in consumer.consume(10000, 1):
            if message.error():
                continue
            value = int(message.value())
            assert value % 8 == message.partition()
            assert value > last[message.partition()], "per-partition order"
            assert message.offset() == value // 8
            last[message.partition()] = value
            seen += 1
    consumer.close()
    assert seen == count


def test_offsets_for_times_and_earliest_latest(broker):
    create(broker, "times", 1)
    producer = Producer({"bootstrap.servers": broker.address, "acks": "all"})
    base = 1_700_000_000_000
    for i in range(10):
        producer.produce("times", value=b"v", timestamp=base + i * 1000)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "unused"})
    found = consumer.offsets_for_times([TopicPartition("times", 0, base + 4500)], timeout=10)
    assert found[0].offset == 5
    low, high = consumer.get_watermark_offsets(TopicPartition("times", 0), timeout=10)
    assert (low, high) == (0, 10)
    consumer.close()
    kp = KafkaConsumer(bootstrap_servers=broker.address)
    tp = KPTopicPartition("times", 0)
    assert kp.offsets_for_times({tp: base + 9000})[tp].offset == 9
    assert kp.offsets_for_times({tp: base + 10000})[tp] is None
    assert kp.end_offsets([tp])[tp] == 10
    kp.close()


def test_offset_of_the_newest_timestamp(broker):
    """ListOffsets v7 MAX_TIMESTAMP (-3): only librdkafka exposes it, through
    confluent-kafka's admin client and kcat -Q; kafka-python and KafkaJS do not."""
    create(broker, "newest", 1)
    producer = Producer({"bootstrap.servers": broker.address, "acks": "all"})
    base = 1_700_000_000_000
    for delta in (5000, 9000, 1000, 9000):
        producer.produce("newest", value=b"v", timestamp=base + delta)
    assert producer.flush(10) == 0
    admin = AdminClient({"bootstrap.servers": broker.address})
    tp = TopicPartition("newest", 0)
    futures = admin.list_offsets({tp: OffsetSpec.max_timestamp()})
    info = futures[tp].result(timeout=10)
    assert (info.offset, info.timestamp) == (1, base + 9000)
    earliest = admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result(timeout=10)
    assert earliest.offset == 0
    out = kcat("-Q", "-b", broker.address, "-t", "newest:0:-3").decode()
    assert "offset 1" in out, out


def test_unknown_topic_with_auto_create_off(make_broker):
    broker = make_broker("auto.create.topics.enable=false")
    metadata = AdminClient({"bootstrap.servers": broker.address}).list_topics(topic="nope", timeout=10)
    assert metadata.topics["nope"].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    consumer = KafkaConsumer(bootstrap_servers=broker.address)
    assert not consumer.partitions_for_topic("nope")  # None or an empty set, by version
    consumer.close()


def test_acked_writes_survive_kill_9(make_broker):
    broker = make_broker()
    create(broker, "durable", 4)
    producer = Producer({"bootstrap.servers": broker.address, "acks": "all", "linger.ms": 2})
    acked = []
    for i in range(5000):
        producer.produce("durable", value=b"%d" % i, partition=i % 4,
                         on_delivery=lambda err, msg: acked.append(int(msg.value())) if err is None else None)
    producer.flush(30)
    assert len(acked) == 5000
    broker.kill9()
    broker.start()
    out = kcat("-b", broker.address, "-C", "-t", "durable", "-o", "beginning", "-e", "-f", "%s\n")
    present = {int(line) for line in out.split()}
    assert set(acked) <= present


def test_idempotent_producers_of_two_clients(broker):
    """librdkafka and kafka-python with idempotence on: InitProducerId, sequenced
    batches, every record once and in order. (Retries under dropped responses and a
    killed broker: test_idempotence.py.)"""
    create(broker, "idempotent", 2)
    producer = Producer({"bootstrap.servers": broker.address, "enable.idempotence": True,
                         "linger.ms": 2})
    for i in range(500):
        producer.produce("idempotent", value=f"c{i}".encode(), partition=i % 2)
    assert producer.flush(15) == 0
    kp = KafkaProducer(bootstrap_servers=broker.address, enable_idempotence=True, acks="all")
    for i in range(200):
        kp.send("idempotent", value=f"k{i}".encode(), partition=i % 2)
    kp.flush(15)
    kp.close()
    out = kcat("-b", broker.address, "-C", "-t", "idempotent", "-o", "beginning", "-e",
               "-f", "%p %s\n").decode().split("\n")
    rows = [line.split(" ") for line in out if line]
    for partition in ("0", "1"):
        values = [v for p, v in rows if p == partition]
        confluent = [v for v in values if v.startswith("c")]
        python = [v for v in values if v.startswith("k")]
        assert confluent == [f"c{i}" for i in range(500) if str(i % 2) == partition]
        assert python == [f"k{i}" for i in range(200) if str(i % 2) == partition]


def test_a_second_process_on_a_data_directory_in_use_is_refused(make_broker):
    from conftest import Broker

    first = make_broker()
    second = Broker(first.data_dir)
    with pytest.raises(RuntimeError, match="exited with 1"):
        second.start()
    second.log.flush()
    with open(second.log.name) as log:
        assert "is in use by another spool process" in log.read()
    metadata = AdminClient({"bootstrap.servers": first.address}).list_topics(timeout=10)
    assert metadata.brokers, "the first broker still serves"
