"""DeleteTopics, CreatePartitions and DeleteRecords with two clients each."""

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KPTopicPartition
from kafka.admin import KafkaAdminClient, NewPartitions as KPNewPartitions

from conftest import kcat


def produce(broker, topic, count, partition=0):
    producer = Producer({"bootstrap.servers": broker.address, "acks": "all"})
    for i in range(count):
        producer.produce(topic, value=b"%d" % i, partition=partition)
    assert producer.flush(10) == 0


def test_delete_topics_with_both_clients(broker):
    admin = AdminClient({"bootstrap.servers": broker.address})
    for future in admin.create_topics([NewTopic(n, 2, 1) for n in ("gone-1", "gone-2", "stays")]).values():
        future.result(timeout=10)
    produce(broker, "gone-1", 10)
    admin.delete_topics(["gone-1"])["gone-1"].result(timeout=10)
    kp_admin = KafkaAdminClient(bootstrap_servers=broker.address)
    kp_admin.delete_topics(["gone-2"])
    kp_admin.close()
    topics = admin.list_topics(timeout=10).topics
    assert "gone-1" not in topics and "gone-2" not in topics and "stays" in topics
    missing = admin.delete_topics(["never-was"])
    with pytest.raises(KafkaException) as error:
        missing["never-was"].result(timeout=10)
    assert error.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    # A recreated topic starts empty.
    admin.create_topics([NewTopic("gone-1", 1, 1)])["gone-1"].result(timeout=10)
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "unused"})
    assert consumer.get_watermark_offsets(TopicPartition("gone-1", 0), timeout=10) == (0, 0)
    consumer.close()


def test_create_partitions_with_both_clients(broker):
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic("growing", 2, 1)])["growing"].result(timeout=10)
    admin.create_partitions([NewPartitions("growing", 4)])["growing"].result(timeout=10)
    kp_admin = KafkaAdminClient(bootstrap_servers=broker.address)
    kp_admin.create_partitions({"growing": KPNewPartitions(6)})
    kp_admin.close()
    assert len(admin.list_topics(timeout=10).topics["growing"].partitions) == 6
    shrink = admin.create_partitions([NewPartitions("growing", 3)])
    with pytest.raises(KafkaException) as error:
        shrink["growing"].result(timeout=10)
    assert error.value.args[0].code() == KafkaError.INVALID_PARTITIONS
    produce(broker, "growing", 5, partition=5)
    out = kcat("-b", broker.address, "-C", "-t", "growing", "-p", "5", "-o", "beginning", "-e", "-f", "%s\n")
    assert out.split() == [b"%d" % i for i in range(5)]


def test_delete_records_with_both_clients(broker):
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic("trimmed", 1, 1)])["trimmed"].result(timeout=10)
    produce(broker, "trimmed", 20)
    result = admin.delete_records([TopicPartition("trimmed", 0, 5)])
    assert result[TopicPartition("trimmed", 0, 5)].result(timeout=10).low_watermark == 5
    kp_admin = KafkaAdminClient(bootstrap_servers=broker.address)
    kp_admin.delete_records({KPTopicPartition("trimmed", 0): 12})
    kp_admin.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.address)
    tp = KPTopicPartition("trimmed", 0)
    assert consumer.beginning_offsets([tp])[tp] == 12
    consumer.close()
    beyond = admin.delete_records([TopicPartition("trimmed", 0, 999)])
    with pytest.raises(KafkaException) as error:
        beyond[TopicPartition("trimmed", 0, 999)].result(timeout=10)
    assert error.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE
    out = kcat("-b", broker.address, "-C", "-t", "trimmed", "-o", "beginning", "-e", "-f", "%o\n")
    assert out.split()[0] == b"12"
