"""A topic deleted and created again under the same name is a new topic: with the
broker killed (SIGKILL) at some point of the delete, the next start finishes it, and
the topic created again is empty, starts at offset 0, and no group sees the old
topic's committed offsets (confluent-kafka and kcat)."""

import os
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import kcat

PARTITIONS = 32


def wait_listed(admin, topic, listed):
    deadline = time.time() + 20
    while (topic in admin.list_topics(timeout=10).topics) != listed:
        assert time.time() < deadline, f"{topic} listed: {not listed}"
        time.sleep(0.1)


def committed(address, topic):
    consumer = Consumer({"bootstrap.servers": address, "group.id": "lifecycle"})
    offsets = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=15)
    consumer.close()
    return [tp.offset for tp in offsets]


@pytest.mark.parametrize("delay_ms", [0, 3, 15])
def test_a_delete_cut_by_kill9_is_finished_and_the_recreated_topic_starts_empty(make_broker,
                                                                                 delay_ms):
    broker = make_broker()
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic("doomed", PARTITIONS, 1)])["doomed"].result(15)
    producer = Producer({"bootstrap.servers": broker.address})
    for i in range(PARTITIONS * 4):
        producer.produce("doomed", value=b"old-%d" % i, partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    # Gone before the brokers die: librdkafka 2.6 sometimes crashes (SIGSEGV in its
    # topic metadata update) when all the brokers of a live producer's topic vanish
    # (confluentinc/librdkafka#4907), which is not what this test is about.
    del producer
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "lifecycle"})
    consumer.commit(offsets=[TopicPartition("doomed", p, 3) for p in range(PARTITIONS)],
                    asynchronous=False)
    consumer.close()
    assert committed(broker.address, "doomed") == [3] * PARTITIONS

    admin.delete_topics(["doomed"], operation_timeout=10)
    time.sleep(delay_ms / 1000)
    broker.kill9()
    broker.start()

    admin = AdminClient({"bootstrap.servers": broker.address})
    if "doomed" in admin.list_topics(timeout=10).topics:
        # The kill came before the delete reached the metadata store: delete again.
        admin.delete_topics(["doomed"], operation_timeout=10)["doomed"].result(15)
    wait_listed(admin, "doomed", False)
    admin.create_topics([NewTopic("doomed", PARTITIONS, 1)])["doomed"].result(15)
    wait_listed(admin, "doomed", True)

    out = kcat("-b", broker.address, "-C", "-t", "doomed", "-o", "beginning", "-e", "-q")
    assert out == b"", "the new topic holds none of the old records"
    assert committed(broker.address, "doomed") == [-1001] * PARTITIONS, "no old offsets"
    offsets = []
    producer = Producer({"bootstrap.servers": broker.address})
    producer.produce("doomed", value=b"new", partition=0,
                     on_delivery=lambda err, msg: offsets.append((err, msg.offset())))
    assert producer.flush(30) == 0
    assert offsets == [(None, 0)], "the new topic starts at offset 0"
    topics = os.listdir(os.path.join(broker.data_dir, "data", "topics"))
    assert len(topics) == 1, f"only the new topic's data: {topics}"
