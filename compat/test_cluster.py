"""On a cluster (SPOOL_COMPAT_CLUSTER=3): a partition moved to another broker (`spool
cluster move`) under a confluent-kafka producer and consumer. The old leader refuses
with NOT_LEADER_OR_FOLLOWER and names the new one (KIP-951: Produce v10, Fetch v16),
and librdkafka follows the hint at once, before any metadata refresh; nothing is lost
or read twice."""

import subprocess

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import CLUSTER, SPOOL_BIN, client_logger, metadata_url

pytestmark = pytest.mark.skipif(CLUSTER < 2, reason="needs a cluster (SPOOL_COMPAT_CLUSTER)")


def hinted_to(lines, node):
    """Whether the client took a leader from a Produce or Fetch answer: librdkafka
    logs that it updated the partition's leader outside a Metadata response."""
    return lines.any_has("updated with leader %d" % node)


def test_a_moved_partition_is_followed_by_the_leader_hint(broker):
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic("moving", 1, 1)])["moving"].result(15)
    leader = admin.list_topics(topic="moving", timeout=10).topics["moving"].partitions[0].leader
    target = next(int(node) for node in broker.node_ids if int(node) != leader)
    # Metadata is refreshed only when the client itself decides to (not periodically
    # within the test), so a leader it learns comes from the hint or a refresh the
    # refusal triggers; the log tells which.
    quiet = {"topic.metadata.refresh.interval.ms": 600000, "debug": "metadata"}
    producer_log, produced = client_logger("producer")
    producer = Producer({"bootstrap.servers": broker.address, "acks": "all", "linger.ms": 5,
                         "enable.idempotence": True, "logger": producer_log, **quiet})
    consumer_log, consumed = client_logger("consumer")
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "moving",
                         "enable.auto.commit": False, "logger": consumer_log, **quiet})
    consumer.assign([TopicPartition("moving", 0, 0)])

    def produce(first, count):
        for i in range(first, first + count):
            producer.produce("moving", value=b"%d" % i)
            producer.poll(0)
        assert producer.flush(30) == 0

    def consume(count):
        values = []
        for _ in range(600):
            if len(values) == count:
                break
            message = consumer.poll(0.1)
            if message is not None and not message.error():
                values.append(int(message.value()))
        return values

    produce(0, 50)
    assert consume(50) == list(range(50))
    subprocess.run([SPOOL_BIN, "cluster", "move", "moving", "0", str(target),
                    "--metadata-url", metadata_url(broker.data_dir)],
                   check=True, capture_output=True, timeout=30)
    produce(50, 50)
    assert consume(50) == list(range(50, 100)), "nothing lost or read twice"
    consumer.close()
    assert hinted_to(produced, target), "the producer followed the Produce v10 hint"
    assert hinted_to(consumed, target), "the consumer followed the Fetch v16 hint"
