"""Transactions with real clients: librdkafka's (confluent-kafka) transactional
producer commits and aborts; read_committed consumers of librdkafka and kafka-python
see the committed records and never the aborted ones, read_uncommitted consumers see
both; a second producer with the same transactional id fences the first, which can
never commit again; and a consume-transform-produce loop writes exactly one output
per input while the broker (every broker of a cluster; and in a cluster, the
transaction coordinator's broker alone, then the broker leading an output partition)
is killed with SIGKILL and restarted."""

import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer

from conftest import CLUSTER

PARTITIONS = 3


def create_topics(address, *names):
    admin = AdminClient({"bootstrap.servers": address})
    futures = admin.create_topics([NewTopic(name, PARTITIONS, 1) for name in names])
    for future in futures.values():
        future.result(15)


def transactional_producer(address, transactional_id, **settings):
    producer = Producer({
        "bootstrap.servers": address,
        "transactional.id": transactional_id,
        "transaction.timeout.ms": 60000,
        **settings,
    })
    producer.init_transactions(30)
    return producer


def values_read(address, topic, isolation, expected):
    """Everything in `topic` as a read_committed or read_uncommitted librdkafka
    consumer sees it, once `expected` values arrived or nothing more came."""
    consumer = Consumer({
        "bootstrap.servers": address,
        "group.id": f"read-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest",
        "isolation.level": isolation,
        "enable.auto.commit": False,
    })
    consumer.subscribe([topic])
    values = []
    deadline = time.time() + 30
    quiet_since = time.time()
    while time.time() < deadline:
        message = consumer.poll(0.2)
        if message is None or message.error():
            if len(values) >= expected and time.time() - quiet_since > 1.0:
                break
            continue
        values.append(message.value().decode())
        quiet_since = time.time()
    consumer.close()
    return sorted(values)


def kafka_python_values(address, topic, isolation):
    consumer = KafkaConsumer(topic, bootstrap_servers=address, auto_offset_reset="earliest",
                             isolation_level=isolation, consumer_timeout_ms=5000)
    values = sorted(message.value.decode() for message in consumer)
    consumer.close()
    return values


def test_read_committed_consumers_see_committed_records_and_never_aborted_ones(broker):
    create_topics(broker.address, "txn-read")
    producer = transactional_producer(broker.address, "reader-tx")
    expected_committed = []
    aborted = []
    for round_ in range(6):
        producer.begin_transaction()
        values = [f"{round_}-{i}" for i in range(20)]
        for i, value in enumerate(values):
            producer.produce("txn-read", value=value, partition=i % PARTITIONS)
        # Sent before the decision: an abort must hide records the broker has.
        producer.flush(30)
        if round_ % 3 == 1:
            producer.abort_transaction(30)
            aborted += values
        else:
            producer.commit_transaction(30)
            expected_committed += values
    # An open transaction holds read_committed readers at its first offset.
    producer.begin_transaction()
    producer.produce("txn-read", value="open", partition=0)
    producer.flush(30)

    everything = sorted(expected_committed + aborted + ["open"])
    assert values_read(broker.address, "txn-read", "read_committed",
                       len(expected_committed)) == sorted(expected_committed)
    assert values_read(broker.address, "txn-read", "read_uncommitted",
                       len(everything)) == everything
    assert kafka_python_values(broker.address, "txn-read", "read_committed") == \
        sorted(expected_committed)
    assert kafka_python_values(broker.address, "txn-read", "read_uncommitted") == everything

    producer.commit_transaction(30)
    with_open = sorted(expected_committed + ["open"])
    assert values_read(broker.address, "txn-read", "read_committed",
                       len(with_open)) == with_open


def test_a_second_producer_with_the_same_id_fences_the_first(broker):
    create_topics(broker.address, "txn-fence")
    first = transactional_producer(broker.address, "fenced-tx")
    first.begin_transaction()
    first.produce("txn-fence", value="from the first", partition=0)
    first.flush(30)
    second = transactional_producer(broker.address, "fenced-tx")
    with pytest.raises(KafkaException) as refused:
        first.produce("txn-fence", value="more from the first", partition=1)
        first.commit_transaction(30)
    error = refused.value.args[0]
    assert error.fatal() or error.code() == KafkaError._FENCED, error
    second.begin_transaction()
    second.produce("txn-fence", value="from the second", partition=0)
    second.commit_transaction(30)
    assert values_read(broker.address, "txn-fence", "read_committed", 1) == ["from the second"]


def coordinator_node(address, transactional_id):
    """The node coordinating `transactional_id`: groups and transactional ids of one
    name share their coordinator, and the admin client names a group's."""
    admin = AdminClient({"bootstrap.servers": address})
    described = admin.describe_consumer_groups([transactional_id])[transactional_id].result(15)
    return described.coordinator.id


class TransformLoop:
    """Reads `ctp-in`, writes each value to `ctp-out` and commits the offsets in the
    same transaction; on any failure starts over with a new consumer and producer,
    which resume from the committed offsets (the new producer fences the old one and
    aborts what it left open)."""

    def __init__(self, address):
        self.address = address
        self.transactions = 0
        self.restarts = 0
        self.stop = threading.Event()
        self.errors = []

    def run(self, inputs):
        while not self.stop.is_set():
            try:
                self._session(inputs)
                return
            except KafkaException as error:
                self.restarts += 1
                self.errors.append(str(error))
                time.sleep(0.2)

    # When every broker is down, librdkafka 2.13+ re-bootstraps and decommissions the
    # brokers it knew, and send_offsets_to_transaction may then wait for a group
    # coordinator handle that will never come up (confluentinc/librdkafka#5511, open):
    # the loop would stall on the client, not on the broker. Without re-bootstrap the
    # clients reconnect to the restarted broker as before.
    NO_REBOOTSTRAP = {"metadata.recovery.strategy": "none"}

    def _session(self, inputs):
        consumer = Consumer({
            "bootstrap.servers": self.address,
            "group.id": "ctp",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            **self.NO_REBOOTSTRAP,
        })
        producer = None
        try:
            producer = transactional_producer(self.address, "ctp-tx",
                                              **{"transaction.timeout.ms": 10000},
                                              **self.NO_REBOOTSTRAP)
            consumer.subscribe(["ctp-in"])
            while not self.stop.is_set():
                messages = consumer.consume(100, 0.5)
                messages = [m for m in messages if not m.error()]
                if not messages:
                    if self._done(consumer, inputs):
                        return
                    continue
                producer.begin_transaction()
                for message in messages:
                    producer.produce("ctp-out", value=message.value(),
                                     partition=message.partition())
                producer.send_offsets_to_transaction(
                    consumer.position(consumer.assignment()),
                    consumer.consumer_group_metadata(), 30)
                producer.commit_transaction(30)
                self.transactions += 1
        finally:
            consumer.close()

    def _done(self, consumer, inputs):
        positions = consumer.committed(
            [TopicPartition("ctp-in", p) for p in range(PARTITIONS)], 10)
        return sum(max(p.offset, 0) for p in positions) >= inputs


def leader_node(address, topic, partition):
    admin = AdminClient({"bootstrap.servers": address})
    return admin.list_topics(topic, timeout=10).topics[topic].partitions[partition].leader


def run_transform_under_kills(broker, kills):
    create_topics(broker.address, "ctp-in", "ctp-out")
    inputs = 3000
    plain = Producer({"bootstrap.servers": broker.address, "linger.ms": 5})
    for i in range(inputs):
        plain.produce("ctp-in", value=str(i), partition=i % PARTITIONS)
    assert plain.flush(30) == 0
    loop = TransformLoop(broker.address)
    thread = threading.Thread(target=loop.run, args=(inputs,))
    thread.start()
    try:
        for moment, kill in zip((5, 15), kills):
            deadline = time.time() + 60
            while loop.transactions < moment and time.time() < deadline:
                time.sleep(0.01)
            assert loop.transactions >= moment, f"the loop stalled: {loop.errors[-3:]}"
            kill()
        thread.join(120)
        assert not thread.is_alive(), f"the loop did not finish: {loop.errors[-3:]}"
    finally:
        loop.stop.set()
        thread.join(10)
    outputs = values_read(broker.address, "ctp-out", "read_committed", inputs)
    expected = sorted(str(i) for i in range(inputs))
    duplicates = len(outputs) - len(set(outputs))
    missing = sorted(set(expected) - set(outputs), key=int)
    assert (duplicates, missing[:10]) == (0, []), f"{len(outputs)} outputs for {inputs} inputs"
    assert outputs == expected


def test_consume_transform_produce_writes_each_output_once_across_kill9(make_broker):
    broker = make_broker()

    def kill_everything():
        broker.kill9()
        time.sleep(0.3)
        broker.start()

    run_transform_under_kills(broker, [kill_everything, kill_everything])


@pytest.mark.skipif(CLUSTER < 2, reason="a cluster's coordinator and leaders fail over alone")
def test_consume_transform_produce_survives_the_coordinators_and_a_leaders_broker(make_broker):
    broker = make_broker()

    def kill(node):
        broker.kill9_node(node)
        time.sleep(0.3)
        broker.start_node(node)

    def kill_the_coordinator():
        kill(coordinator_node(broker.address, "ctp-tx"))

    def kill_a_leader_of_the_output():
        # Another broker than the coordinator's, when one leads an output partition.
        coordinator = coordinator_node(broker.address, "ctp-tx")
        leaders = [leader_node(broker.address, "ctp-out", p) for p in range(PARTITIONS)]
        others = [node for node in leaders if node != coordinator]
        kill((others or leaders)[0])

    run_transform_under_kills(broker, [kill_the_coordinator, kill_a_leader_of_the_output])
