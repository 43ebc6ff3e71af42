"""Databus (`spool databus`, docs/databus.md) with real clients: librdkafka
(confluent-kafka) and kafka-python producers, groups and transactions through the
agent, unchanged but for `bootstrap.servers`; every acknowledged record upstream
once, in order per partition; upstream brokers killed and restarted; the agent
killed -9 with acks=0 batches spilled, replayed when it comes back. (KafkaJS:
compat/js/databus.test.js.) Embedded mode and the cluster phase."""

import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

from conftest import SPOOL_BIN, free_port


class Databus:
    """A `spool databus` process in front of `broker`."""

    def __init__(self, broker, directory, *settings):
        self.broker = broker
        self.port = free_port()
        self.spill = os.path.join(directory, "spill")
        self.settings = [f"databus.spill.dir={self.spill}", *settings]
        self.log = open(os.path.join(directory, "databus.log"), "ab")
        self.process = None

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        args = [SPOOL_BIN, "databus", "--listen", self.address,
                "--brokers", ",".join(self.broker.addresses)]
        for setting in self.settings:
            args += ["--set", setting]
        self.process = subprocess.Popen(args, stdout=self.log, stderr=self.log)
        deadline = time.time() + 30
        while True:
            assert self.process.poll() is None, f"databus exited: {self.log_tail()}"
            try:
                metadata = AdminClient({"bootstrap.servers": self.address}).list_topics(timeout=2)
                if metadata.brokers:
                    return self
            except Exception:
                pass
            assert time.time() < deadline, f"databus did not answer: {self.log_tail()}"
            time.sleep(0.1)

    def log_tail(self):
        self.log.flush()
        with open(self.log.name, "rb") as f:
            return b"".join(f.readlines()[-20:]).decode(errors="replace")

    def kill9(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def databus(broker):
    with tempfile.TemporaryDirectory() as directory:
        bus = Databus(broker, directory).start()
        yield bus
        bus.stop()


def create(broker, name, partitions, config=None):
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name].result(15)
    # Every broker knows it before a client asks through Databus.
    deadline = time.time() + 15
    while name not in admin.list_topics(timeout=10).topics:
        assert time.time() < deadline
        time.sleep(0.1)


def read_upstream(broker, topic, partitions, expected, isolation="read_uncommitted", timeout=60):
    """(partition, offset, value) of `expected` records read straight from the cluster."""
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": f"r-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, deadline = [], time.time() + timeout
    while len(got) < expected and time.time() < deadline:
        message = consumer.poll(0.2)
        if message is None or message.error():
            continue
        got.append((message.partition(), message.offset(), message.value().decode()))
    extra = consumer.poll(1.0)
    assert extra is None or extra.error(), f"more than {expected}: {extra.value()}"
    consumer.close()
    return got


def upstream_produce_requests(broker):
    """Produce requests every upstream broker has answered (its /metrics)."""
    total = 0
    for url in broker.admin_urls:
        with urllib.request.urlopen(url + "/metrics", timeout=5) as answer:
            for line in answer.read().decode().splitlines():
                if line.startswith('spool_requests_total{api="Produce"'):
                    total += int(float(line.rsplit(" ", 1)[1]))
    return total


class Deliveries:
    """The delivery reports of producers on several threads: each acknowledged
    record's (partition, offset) by `key(value)`, and the errors."""

    def __init__(self, key=lambda value: value.decode()):
        self.acknowledged, self.errors, self.lock = {}, [], threading.Lock()
        self.key = key

    def __call__(self, error, message):
        with self.lock:
            if error:
                self.errors.append(error)
            else:
                self.acknowledged[self.key(message.value())] = (message.partition(), message.offset())


def assert_once_in_order(records, acknowledged):
    """Every acknowledged value upstream once, at its acknowledged offset, and each
    producer's values in its sending order within a partition."""
    by_value = {}
    for partition, offset, value in records:
        assert value not in by_value, f"{value} upstream twice"
        by_value[value] = (partition, offset)
    for value, where in acknowledged.items():
        assert by_value.get(value) == where, f"{value}: acknowledged at {where}, upstream at {by_value.get(value)}"
    last = {}
    for partition, offset, value in sorted(records):
        producer, sequence = value.rsplit("-", 1)
        key = (producer, partition)
        assert last.get(key, -1) < int(sequence), f"{value} out of order in partition {partition}"
        last[key] = int(sequence)


def test_many_librdkafka_producers_are_merged_and_every_record_lands_once_in_order(broker, databus):
    topic = f"bus-{uuid.uuid4().hex[:8]}"
    create(broker, topic, 3)
    before = upstream_produce_requests(broker)
    delivered = Deliveries()

    def producer(index):
        p = Producer({"bootstrap.servers": databus.address, "client.id": f"app-{index}",
                      "linger.ms": 0, "acks": "all" if index % 2 else "1"})
        for sequence in range(100):
            p.produce(topic, value=f"p{index}-{sequence}".encode(), partition=sequence % 3,
                      on_delivery=delivered)
            p.poll(0)
            time.sleep(0.002)
        assert p.flush(60) == 0

    threads = [threading.Thread(target=producer, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not delivered.errors, delivered.errors[:3]
    assert len(delivered.acknowledged) == 1600
    records = read_upstream(broker, topic, 3, 1600)
    assert len(records) == 1600
    assert_once_in_order(records, delivered.acknowledged)
    sent = upstream_produce_requests(broker) - before
    assert sent < 800, f"{sent} produce requests upstream for 1600 records: not merged"


def test_kafka_python_producer_and_group_through_databus(broker, databus):
    topic = f"bus-{uuid.uuid4().hex[:8]}"
    create(broker, topic, 2)
    producer = KafkaProducer(bootstrap_servers=databus.address, client_id="kp-app",
                             compression_type="gzip", acks=1, linger_ms=5)
    futures = [producer.send(topic, value=f"kp-{i}".encode(), partition=i % 2) for i in range(200)]
    producer.flush(30)
    acknowledged = {f"kp-{i}": (f.get(30).partition, f.get(30).offset) for i, f in enumerate(futures)}
    producer.close()
    assert_once_in_order(read_upstream(broker, topic, 2, 200), acknowledged)

    group = f"bus-group-{uuid.uuid4().hex[:6]}"
    consumer = KafkaConsumer(topic, bootstrap_servers=databus.address, group_id=group,
                             client_id="kp-reader", auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=5000)
    values = {m.value.decode() for m in consumer}
    assert values == set(acknowledged)
    consumer.commit()
    # The group lives upstream, its member named by the client's own id.
    admin = KafkaAdminClient(bootstrap_servers=broker.address)
    committed = admin.list_consumer_group_offsets(group)
    assert sum(o.offset for o in committed.values()) == 200
    described = admin.describe_consumer_groups([group])[0]
    assert [m.client_id for m in described.members] == ["kp-reader"]
    consumer.close()
    # Through Databus too: DescribeGroups and ListGroups answer.
    through = KafkaAdminClient(bootstrap_servers=databus.address)
    assert group in [g[0] for g in through.list_consumer_groups()]


def test_idempotent_and_transactional_producers_pass_through(broker, databus):
    topic = f"bus-{uuid.uuid4().hex[:8]}"
    create(broker, topic, 2)
    idempotent = Producer({"bootstrap.servers": databus.address, "enable.idempotence": True})
    for i in range(50):
        idempotent.produce(topic, value=f"idem-{i}".encode(), partition=i % 2)
    assert idempotent.flush(30) == 0
    transactional = Producer({"bootstrap.servers": databus.address,
                              "transactional.id": f"bus-txn-{uuid.uuid4().hex[:6]}"})
    transactional.init_transactions(30)
    transactional.begin_transaction()
    for i in range(10):
        transactional.produce(topic, value=f"aborted-{i}".encode(), partition=0)
    transactional.abort_transaction(30)
    transactional.begin_transaction()
    for i in range(10):
        transactional.produce(topic, value=f"committed-{i}".encode(), partition=1)
    transactional.commit_transaction(30)
    records = read_upstream(broker, topic, 2, 60, isolation="read_committed")
    values = sorted(v for _, _, v in records)
    assert values == sorted([f"idem-{i}" for i in range(50)] + [f"committed-{i}" for i in range(10)])


def test_upstream_broker_killed_and_restarted_loses_no_acknowledged_record(broker, databus):
    topic = f"bus-{uuid.uuid4().hex[:8]}"
    create(broker, topic, 3)
    delivered, stop = Deliveries(), threading.Event()

    def produce(index):
        p = Producer({"bootstrap.servers": databus.address, "acks": "all", "linger.ms": 2,
                      "message.timeout.ms": 60000})
        sequence = 0
        while not stop.is_set():
            p.produce(topic, value=f"k{index}-{sequence}".encode(), partition=sequence % 3,
                      on_delivery=delivered)
            p.poll(0)
            sequence += 1
            time.sleep(0.005)
        p.flush(90)

    threads = [threading.Thread(target=produce, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(2)
    if broker.count == 1:
        broker.kill9()
        time.sleep(1)
        broker.start()
    else:
        # The leader of partition 0, killed and restarted; the others take over.
        metadata = AdminClient({"bootstrap.servers": broker.address}).list_topics(topic, timeout=10)
        leader = metadata.topics[topic].partitions[0].leader
        broker.kill9_node(leader)
        time.sleep(3)
        broker.start_node(leader)
    time.sleep(3)
    stop.set()
    for thread in threads:
        thread.join()
    with delivered.lock:
        assert not delivered.errors, delivered.errors[:3]
        count = len(delivered.acknowledged)
    assert count > 400
    records = read_upstream(broker, topic, 3, count)
    assert_once_in_order(records, delivered.acknowledged)


def test_databus_killed_with_acks0_batches_spilled_replays_them(make_broker):
    broker = make_broker()
    topic = f"bus-{uuid.uuid4().hex[:8]}"
    create(broker, topic, 1)
    with tempfile.TemporaryDirectory() as directory:
        bus = Databus(broker, directory, "databus.request.timeout.ms=2000").start()
        producer = Producer({"bootstrap.servers": bus.address, "acks": "0", "linger.ms": 0})
        for i in range(20):
            producer.produce(topic, value=f"before-{i}".encode(), partition=0)
        assert producer.flush(10) == 0
        read_upstream(broker, topic, 1, 20)
        # The upstream goes away: acks=0 batches go to the spill directory.
        broker.kill9()
        for i in range(30):
            producer.produce(topic, value=f"spilled-{i}".encode(), partition=0)
            producer.poll(0)
        producer.flush(10)
        deadline = time.time() + 30
        while not any(name.startswith("spill-") and os.path.getsize(os.path.join(bus.spill, name)) > 0
                      for name in os.listdir(bus.spill) if os.path.isdir(bus.spill)):
            assert time.time() < deadline, f"nothing spilled: {bus.log_tail()}"
            time.sleep(0.2)
        time.sleep(1)
        bus.kill9()
        broker.start()
        bus.start()
        records = read_upstream(broker, topic, 1, 50)
        values = [v for _, _, v in sorted(records)]
        assert values == [f"before-{i}" for i in range(20)] + [f"spilled-{i}" for i in range(30)]
        deadline = time.time() + 30
        while any(os.path.getsize(os.path.join(bus.spill, name)) for name in os.listdir(bus.spill)):
            assert time.time() < deadline, "spill files not removed after the replay"
            time.sleep(0.2)
        bus.stop()


def test_bad_frames_close_only_their_connection(broker, databus):
    """Garbage, an oversized size and an unknown API close the sender's connection;
    Databus goes on serving."""
    host, port = databus.address.split(":")
    for payload in (b"\x00\x00\x00\x08garbage!", b"\x7f\xff\xff\xff",
                    b"\x00\x00\x00\x0a\x03\xe7\x00\x00\x00\x00\x00\x01\x00\x00"):
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(payload)
            s.settimeout(5)
            try:
                assert s.recv(1024) == b"", "the connection is closed, nothing answered"
            except ConnectionResetError:
                pass
    topic = f"bus-{uuid.uuid4().hex[:8]}"
    create(broker, topic, 1)
    producer = Producer({"bootstrap.servers": databus.address})
    producer.produce(topic, value=b"still-served", partition=0)
    assert producer.flush(30) == 0
    assert [v for _, _, v in read_upstream(broker, topic, 1, 1)] == ["still-served"]


def test_a_merged_batch_over_the_topics_limit_goes_one_producer_at_a_time(broker, databus):
    topic = f"bus-{uuid.uuid4().hex[:8]}"
    create(broker, topic, 1, {"max.message.bytes": "3000"})
    delivered = Deliveries(key=lambda value: value[:8].decode())

    def producer(index):
        p = Producer({"bootstrap.servers": databus.address, "linger.ms": 0,
                      "compression.type": "none"})
        # Each record fits the topic's limit; eight of them merged do not.
        p.produce(topic, value=f"big-{index:04d}".encode() + b"x" * 1500, partition=0,
                  on_delivery=delivered)
        assert p.flush(30) == 0

    threads = [threading.Thread(target=producer, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not delivered.errors, delivered.errors[:3]
    assert len(delivered.acknowledged) == 8
    records = read_upstream(broker, topic, 1, 8)
    assert sorted(v[:8] for _, _, v in records) == sorted(delivered.acknowledged)
