"""`__consumer_offsets` readable as on Kafka, for lag monitors such as Burrow: every
group's committed offsets in Kafka's key (v1) and value (v3) format, in the partition
Kafka hashes the group to, read with librdkafka (confluent-kafka) and kafka-python;
compacted (a key's latest commit only), followed as commits come, listed only when
asked for, and read-only."""

import struct
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KPTopicPartition
from kafka.admin import KafkaAdminClient

OFFSETS = "__consumer_offsets"


def partition_for(group):
    """Kafka's abs(group.hashCode()) % 50, with Java's String.hashCode."""
    utf16 = group.encode("utf-16-be")
    hash_ = 0
    for i in range(0, len(utf16), 2):
        hash_ = (hash_ * 31 + ((utf16[i] << 8) | utf16[i + 1])) & 0xFFFFFFFF
    if hash_ >= 1 << 31:
        hash_ -= 1 << 32
    return (0 if hash_ == -(1 << 31) else abs(hash_)) % 50


def read_string(data, at):
    (length,) = struct.unpack_from(">h", data, at)
    return data[at + 2:at + 2 + length].decode(), at + 2 + length


def decode(key, value):
    """(group, topic, partition) -> (offset, leader epoch, metadata, commit time)."""
    (key_version,) = struct.unpack_from(">h", key, 0)
    assert key_version == 1, key
    group, at = read_string(key, 2)
    topic, at = read_string(key, at)
    (partition,) = struct.unpack_from(">i", key, at)
    (value_version, offset, leader_epoch) = struct.unpack_from(">hqi", value, 0)
    assert value_version == 3, value
    metadata, at = read_string(value, 14)
    (commit_ms,) = struct.unpack_from(">q", value, at)
    return (group, topic, partition), (offset, leader_epoch, metadata, commit_ms)


def commit(address, group, offsets, metadata=""):
    consumer = Consumer({"bootstrap.servers": address, "group.id": group})
    consumer.commit(offsets=[TopicPartition("orders", p, o, metadata=metadata) for p, o in offsets],
                    asynchronous=False)
    consumer.close()


def read_confluent(address, partition, start=0, timeout=10):
    consumer = Consumer({"bootstrap.servers": address, "group.id": "reader",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition(OFFSETS, partition, start)])
    records = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error():
            if message.error().code() == -191:  # _PARTITION_EOF
                break
            raise KafkaException(message.error())
        records.append((message.offset(), decode(message.key(), message.value())))
    consumer.close()
    return records


def test_committed_offsets_are_read_from_consumer_offsets_with_two_clients(make_broker):
    broker = make_broker()
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic("orders", 2, 1)])["orders"].result(15)
    producer = Producer({"bootstrap.servers": broker.address})
    for i in range(20):
        producer.produce("orders", value=b"%d" % i, partition=i % 2)
    producer.flush(10)

    group = "lag-monitored"
    partition = partition_for(group)
    commit(broker.address, group, [(0, 5), (1, 3)], metadata="first")
    records = read_confluent(broker.address, partition)
    latest = dict(value for _, value in records)
    assert {key: value[0] for key, value in latest.items()} == {
        (group, "orders", 0): 5, (group, "orders", 1): 3}
    # confluent-kafka sends the metadata string with its C terminator.
    assert all(value[2].rstrip("\x00") == "first" and value[3] > 1_600_000_000_000
               for value in latest.values()), latest

    # A newer commit of a key replaces its record, at a higher offset (compaction).
    first_offsets = [offset for offset, _ in records]
    commit(broker.address, group, [(0, 9)])
    records = read_confluent(broker.address, partition)
    by_key = {key: (offset, value[0]) for offset, (key, value) in records}
    assert by_key[(group, "orders", 0)][1] == 9
    assert by_key[(group, "orders", 0)][0] > max(first_offsets)
    assert by_key[(group, "orders", 1)][1] == 3
    assert len(records) == 2

    # kafka-python reads the same records, and its group's commits are there too.
    kp_group = "kp-group"
    kp = KafkaConsumer(bootstrap_servers=broker.address, group_id=kp_group, enable_auto_commit=False)
    from kafka.structs import OffsetAndMetadata
    kp.commit({KPTopicPartition("orders", 1): OffsetAndMetadata(7, "kp", -1)})
    kp.close()
    reader = KafkaConsumer(bootstrap_servers=broker.address, enable_auto_commit=False,
                           consumer_timeout_ms=3000)
    wanted = [KPTopicPartition(OFFSETS, partition), KPTopicPartition(OFFSETS, partition_for(kp_group))]
    reader.assign(wanted)
    reader.seek_to_beginning()
    seen = {}
    for message in reader:
        key, value = decode(message.key, message.value)
        seen[key] = value[:3]
    end = reader.end_offsets(wanted)
    reader.close()
    assert seen[(group, "orders", 0)][0] == 9
    assert seen[(kp_group, "orders", 1)] == (7, -1, "kp")
    assert end[KPTopicPartition(OFFSETS, partition)] == max(by_key.values())[0] + 1

    # librdkafka's watermarks: the log starts at 0 and ends after the newest commit.
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "wm"})
    low, high = consumer.get_watermark_offsets(TopicPartition(OFFSETS, partition), timeout=10)
    consumer.close()
    assert (low, high) == (0, max(by_key.values())[0] + 1)


def test_a_reader_at_the_end_sees_new_commits_as_they_come(make_broker):
    broker = make_broker()
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic("orders", 2, 1)])["orders"].result(15)
    group = "followed"
    partition = partition_for(group)
    commit(broker.address, group, [(0, 1)])
    follower = Consumer({"bootstrap.servers": broker.address, "group.id": "follower",
                         "auto.offset.reset": "latest", "enable.auto.commit": False})
    follower.assign([TopicPartition(OFFSETS, partition, -1)])  # OFFSET_END
    assert follower.poll(1.5) is None
    commit(broker.address, group, [(0, 2), (1, 4)])
    got = {}
    deadline = time.time() + 15
    while len(got) < 2 and time.time() < deadline:
        message = follower.poll(0.5)
        if message is not None and not message.error():
            key, value = decode(message.key(), message.value())
            got[key] = value[0]
    follower.close()
    assert got == {(group, "orders", 0): 2, (group, "orders", 1): 4}


def test_it_is_listed_only_when_asked_for_and_is_read_only(make_broker):
    broker = make_broker()
    admin = AdminClient({"bootstrap.servers": broker.address})
    assert OFFSETS not in admin.list_topics(timeout=10).topics
    described = admin.list_topics(topic=OFFSETS, timeout=10).topics[OFFSETS]
    assert described.error is None and len(described.partitions) == 50
    kp = KafkaAdminClient(bootstrap_servers=broker.address)
    (topic,) = kp.describe_topics([OFFSETS])
    assert topic["is_internal"] and len(topic["partitions"]) == 50
    assert OFFSETS not in kp.list_topics()
    kp.close()

    with pytest.raises(KafkaException) as error:
        admin.create_topics([NewTopic(OFFSETS, 1, 1)])[OFFSETS].result(15)
    assert error.value.args[0].name() == "TOPIC_ALREADY_EXISTS"
    producer = Producer({"bootstrap.servers": broker.address, "message.timeout.ms": 5000})
    failures = []
    producer.produce(OFFSETS, value=b"x", partition=0, on_delivery=lambda err, _: failures.append(err))
    producer.flush(10)
    assert failures and failures[0] is not None


def test_commit_metadata_holding_nul_is_kept(make_broker):
    """confluent-kafka sends a commit's metadata with its C terminator, and any client
    may put NUL in it: PostgreSQL's text refused it, and such first commits were
    answered COORDINATOR_NOT_AVAILABLE on a cluster."""
    broker = make_broker()
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic("orders", 2, 1)])["orders"].result(15)
    commit(broker.address, "nul-confluent", [(0, 4)], metadata="note")
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "nul-confluent"})
    (committed,) = consumer.committed([TopicPartition("orders", 0)], timeout=10)
    consumer.close()
    assert committed.offset == 4 and committed.metadata.rstrip("\x00") == "note"

    from kafka.structs import OffsetAndMetadata
    kp = KafkaConsumer(bootstrap_servers=broker.address, group_id="nul-kp", enable_auto_commit=False)
    kp.commit({KPTopicPartition("orders", 1): OffsetAndMetadata(6, "a\x00b", -1)})
    assert kp.committed(KPTopicPartition("orders", 1), metadata=True) == OffsetAndMetadata(6, "a\x00b", -1)
    kp.close()
