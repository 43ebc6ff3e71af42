"""Leader epochs with real clients: every broker start takes ownership of the
partitions under a new leader epoch. A consumer reading across restarts (librdkafka
validates its position with OffsetForLeaderEpoch when the epoch moves, KIP-320;
kafka-python reads on) goes on without loss, without reading anything twice, and
without falling back to auto.offset.reset; the records carry the epoch they were
written under."""

import time

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as Position
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaClient, KafkaConsumer, TopicPartition
from kafka.protocol.offset_for_leader_epoch import OffsetForLeaderEpochRequest

from conftest import CLUSTER

RESTARTS = 3
PER_ROUND = 40


def produce(address, topic, first, count):
    producer = Producer({"bootstrap.servers": address, "linger.ms": 5})
    for i in range(first, first + count):
        producer.produce(topic, value=str(i).encode())
    assert producer.flush(30) == 0


def create_topic(address, topic):
    admin = AdminClient({"bootstrap.servers": address})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)


def restart(broker, kill):
    if kill:
        broker.kill9()
    else:
        broker.stop()
    broker.start()


class LibrdkafkaReader:
    def __init__(self, address, topic):
        self.protocol_log = []
        self.consumer = Consumer({
            "bootstrap.servers": address,
            "group.id": "epoch-readers",
            "enable.auto.commit": False,
            # A reset would surface as an error instead of silently moving.
            "auto.offset.reset": "error",
            "topic.metadata.refresh.interval.ms": 500,
            "debug": "protocol",
        }, logger=self)
        # From offset 0, so that nothing but a lost position could ask for a reset.
        self.consumer.assign([Position(topic, 0, 0)])

    # The logger protocol librdkafka's debug lines arrive through.
    def log(self, level, message, *args):
        self.protocol_log.append(message % args if args else message)

    def read(self, count, deadline_s=60):
        values, epochs = [], []
        deadline = time.time() + deadline_s
        while len(values) < count and time.time() < deadline:
            msg = self.consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                # Connection errors while the broker restarts are expected; anything
                # about offsets is not.
                assert msg.error().code() in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
                                              KafkaError._RESOLVE), msg.error()
                continue
            values.append(int(msg.value()))
            epochs.append(msg.leader_epoch())
        return values, epochs


def test_a_librdkafka_consumer_reads_on_across_restarts_that_bump_the_epoch(make_broker):
    broker = make_broker()
    create_topic(broker.address, "epochs")
    produce(broker.address, "epochs", 0, PER_ROUND)
    reader = LibrdkafkaReader(broker.address, "epochs")
    values, epochs = reader.read(PER_ROUND)
    assert values == list(range(PER_ROUND))
    assert set(epochs) == {0}, epochs
    previous = 0
    for round in range(1, RESTARTS + 1):
        restart(broker, kill=round % 2 == 0)
        produce(broker.address, "epochs", round * PER_ROUND, PER_ROUND)
        values, epochs = reader.read(PER_ROUND)
        assert values == list(range(round * PER_ROUND, (round + 1) * PER_ROUND)), \
            f"round {round}: lost or read twice"
        assert len(set(epochs)) == 1, f"round {round}: one producer, one leader, one epoch: {epochs}"
        # One broker takes epoch `round` at its start; on a cluster, where a stop hands
        # the partition to another node and a start may hand it back, the epoch rises
        # by a step or more.
        if CLUSTER == 1:
            assert epochs[0] == round, f"round {round}: written under epoch {round}: {epochs}"
        else:
            assert epochs[0] > previous, f"round {round}: the epoch rose: {epochs} after {previous}"
        previous = epochs[0]
    time.sleep(1)
    msg = reader.consumer.poll(1)
    assert msg is None or msg.error(), "nothing more to read"
    reader.consumer.close()
    sent = [line for line in reader.protocol_log if "Sent OffsetForLeaderEpochRequest" in line]
    assert sent, "librdkafka validated its position after an epoch change"


def test_a_kafka_python_consumer_reads_on_across_restarts(make_broker):
    broker = make_broker()
    create_topic(broker.address, "epochs-kp")
    produce(broker.address, "epochs-kp", 0, PER_ROUND)
    consumer = KafkaConsumer(bootstrap_servers=broker.address, auto_offset_reset="none",
                             enable_auto_commit=False, consumer_timeout_ms=1000,
                             reconnect_backoff_max_ms=500, metadata_max_age_ms=500)
    partition = TopicPartition("epochs-kp", 0)
    consumer.assign([partition])
    consumer.seek(partition, 0)

    # The leader epoch each round was written under: 0, 1, 2, ... on one broker; on a
    # cluster, where stops hand partitions over, rising by a step or more.
    written_under = []

    def read(count):
        values, epochs = [], set()
        deadline = time.time() + 60
        while len(values) < count and time.time() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values += [int(r.value) for r in records]
                epochs |= {r.leader_epoch for r in records}
        assert len(epochs) == 1, f"one producer, one leader, one epoch: {epochs}"
        written_under.append(epochs.pop())
        return values

    assert read(PER_ROUND) == list(range(PER_ROUND))
    for round in range(1, RESTARTS + 1):
        restart(broker, kill=round % 2 == 1)
        produce(broker.address, "epochs-kp", round * PER_ROUND, PER_ROUND)
        assert read(PER_ROUND) == list(range(round * PER_ROUND, (round + 1) * PER_ROUND)), \
            f"round {round}: lost or read twice"
    consumer.close()
    assert written_under == sorted(set(written_under)), f"epochs rise: {written_under}"
    if CLUSTER == 1:
        assert written_under == list(range(RESTARTS + 1)), "each start takes a new epoch"

    # OffsetForLeaderEpoch through kafka-python's own encoder, v2 and v3 (its v4 class
    # sends a non-flexible request header, which the broker refuses as malformed):
    # (error, epoch, end offset) for (current epoch, epoch asked).
    # Asked of the partition's leader, with the epoch it leads under now.
    client = KafkaClient(bootstrap_servers=broker.address)
    client.add_topic("epochs-kp")
    deadline = time.time() + 20
    while client.cluster.leader_for_partition(partition) in (None, -1):
        assert time.time() < deadline, "kafka-python found no leader"
        client.poll(future=client.cluster.request_update(), timeout_ms=1000)
    node = client.cluster.leader_for_partition(partition)
    current = client.cluster.leader_epoch_for_partition(partition)
    assert current >= written_under[-1]
    while not client.ready(node):
        assert time.time() < deadline, "kafka-python did not connect"
        client.poll(timeout_ms=100)

    def end_offset(version, current, epoch):
        topics = [("epochs-kp", [(0, current, epoch)])]
        if version >= 3:
            request = OffsetForLeaderEpochRequest[version](replica_id=-1, topics=topics)
        else:
            request = OffsetForLeaderEpochRequest[version](topics=topics)
        future = client.send(node, request)
        client.poll(future=future, timeout_ms=10000)
        assert future.succeeded(), future.exception
        partition = future.value.topics[0][1][0]
        return partition[0], partition[2], partition[3]

    for version in (2, 3):
        # An epoch's end is where the next epoch's records begin (the log's end for
        # the last).
        for round, epoch in enumerate(written_under):
            assert end_offset(version, current, epoch) == (0, epoch, (round + 1) * PER_ROUND)
        assert end_offset(version, -1, current + 5) == (0, -1, -1), "newer than any"
        assert end_offset(version, current - 1, 0)[0] == 74, "FENCED_LEADER_EPOCH"
        assert end_offset(version, current + 1, 0)[0] == 75, "UNKNOWN_LEADER_EPOCH"
    client.close()
