"""Reads anywhere in shared-storage mode (docs/cluster.md#racks-readers-and-preferred-
replicas): a cluster of two writers (racks a and b) and a reader (rack r, started with
`broker.roles=reader`). A consumer that sets `client.rack=r` is sent by each leader to
the reader (KIP-392's preferred read replica, which librdkafka's log shows it took)
and reads there exactly what the leaders serve; read_committed through the reader
hides aborted transactions; a reader killed mid-read sends its consumers back to the
leaders without loss; consumers bootstrapped at the reader (confluent-kafka and
kafka-python, which reads from leaders) join groups and commit, coordinated by a
writer. KafkaJS's `rackId` is tested in compat/js."""

import json
import subprocess
import time
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer

from conftest import SPOOL_BIN, STORAGE, client_logger, metadata_url

pytestmark = pytest.mark.skipif(STORAGE != "s3", reason="reads anywhere need shared storage")

READER = 3
RACKS = {1: "a", 2: "b", READER: "r"}
PARTITIONS = 4


def node_settings(node):
    settings = ["--set", f"broker.rack={RACKS[node]}"]
    if node == READER:
        settings += ["--set", "broker.roles=reader"]
    return settings


@pytest.fixture
def cluster(make_broker):
    return make_broker(count=3, node_args=node_settings)


def topic_with_records(cluster, name, count=400):
    """A topic of PARTITIONS partitions with `count` records (acks=all), keyed so
    that every partition has some."""
    admin = AdminClient({"bootstrap.servers": cluster.address})
    try:
        # Three brokers of this test beside the other workers' on two cores: room to
        # wait, and the brokers' log if even that is not enough.
        admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(30)
    except Exception as error:
        raise AssertionError(f"creating {name} failed: {error!r}\n{cluster.log_tail(60)}") from error
    producer = Producer({"bootstrap.servers": cluster.address, "acks": "all", "linger.ms": 5})
    for i in range(count):
        producer.produce(name, key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"%d" % i)],
                         partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    return admin


def read_all(config, topic, count, timeout=30):
    """Every record of `topic` from the start, as (partition, offset, key, value,
    headers, timestamp), with the consumer's log lines."""
    logger, lines = client_logger("consumer")
    consumer = Consumer({"group.id": f"g-{uuid.uuid4().hex}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "logger": logger, **config})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    records = []
    deadline = time.time() + timeout
    while len(records) < count and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is None or message.error():
            continue
        records.append((message.partition(), message.offset(), message.key(), message.value(),
                        message.headers(), message.timestamp()))
    consumer.close()
    return sorted(records), lines


def served_fetch_bytes(cluster, node):
    """The bytes of records broker `node` has served to fetches (its /metrics)."""
    with urllib.request.urlopen(cluster.admin_url_of(node) + "/metrics", timeout=5) as answer:
        text = answer.read().decode()
    total = 0
    for line in text.splitlines():
        if line.startswith("spool_topic_bytes_out_total"):
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def test_racks_and_roles_show_in_metadata_and_the_reader_leads_nothing(cluster):
    admin = topic_with_records(cluster, "placed", count=8)
    metadata = admin.list_topics(timeout=10)
    # Metadata's racks, as kafka-python reads them (confluent-kafka does not show them).
    described = KafkaAdminClient(bootstrap_servers=cluster.address).describe_cluster()
    assert {b["node_id"]: b["rack"] for b in described["brokers"]} == RACKS
    leaders = {p.leader for p in metadata.topics["placed"].partitions.values()}
    assert leaders == {1, 2}, "spread over both racks, none on the reader"
    # Replicas: the leader, then the broker it names to each other rack (Java clients
    # follow a preferred read replica only if it is one).
    for partition in metadata.topics["placed"].partitions.values():
        assert partition.replicas[0] == partition.leader
        assert sorted(partition.replicas) == [1, 2, READER], partition.replicas
    status = subprocess.run([SPOOL_BIN, "cluster", "status", "--metadata-url",
                             metadata_url(cluster.data_dir), "--format", "json"],
                            capture_output=True, text=True, check=True)
    brokers = {b["node_id"]: b for b in json.loads(status.stdout)["brokers"]}
    assert {n: (b["rack"], b["role"]) for n, b in brokers.items()} == {
        1: ("a", "writer"), 2: ("b", "writer"), READER: ("r", "reader")}
    assert brokers[READER]["partitions"] == 0 and brokers[READER]["groups"] == 0
    # The REST API the console draws its Brokers table from, asked of the reader.
    with urllib.request.urlopen(cluster.admin_url_of(READER) + "/api/cluster", timeout=5) as answer:
        shown = json.load(answer)
    assert {b["node_id"]: (b["rack"], b["reader"], b["partitions_led"] > 0)
            for b in shown["brokers"]} == {1: ("a", False, True), 2: ("b", False, True),
                                           READER: ("r", True, False)}


def test_a_consumer_of_the_readers_rack_reads_there_what_the_leaders_serve(cluster):
    topic_with_records(cluster, "anywhere")
    from_leaders, _ = read_all({"bootstrap.servers": cluster.address}, "anywhere", 400)
    assert len(from_leaders) == 400
    before = served_fetch_bytes(cluster, READER)
    from_reader, lines = read_all({"bootstrap.servers": cluster.address, "client.rack": "r",
                                   "debug": "fetch"}, "anywhere", 400)
    assert from_reader == from_leaders, "the same records, offsets, headers and timestamps"
    assert lines.any_has("preferred replica"), lines.lines[-20:]
    assert served_fetch_bytes(cluster, READER) > before, "the reader served the records"


def test_read_committed_through_the_reader_hides_aborted_transactions(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.address})
    admin.create_topics([NewTopic("txns", PARTITIONS, 1)])["txns"].result(30)
    producer = Producer({"bootstrap.servers": cluster.address, "transactional.id": "t-reader"})
    producer.init_transactions(15)
    for round_ in range(6):
        producer.begin_transaction()
        for i in range(20):
            producer.produce("txns", value=b"r%d-%d" % (round_, i), partition=i % PARTITIONS)
        if round_ % 2:
            producer.abort_transaction(15)
        else:
            producer.commit_transaction(15)
    records, lines = read_all({"bootstrap.servers": cluster.address, "client.rack": "r",
                               "isolation.level": "read_committed", "debug": "fetch"},
                              "txns", 60, timeout=20)
    values = sorted(r[3] for r in records)
    assert values == sorted(b"r%d-%d" % (r, i) for r in (0, 2, 4) for i in range(20))
    assert lines.any_has("preferred replica")


def test_a_reader_killed_mid_read_sends_its_consumers_back_to_the_leaders(cluster):
    topic_with_records(cluster, "survives", count=400)
    logger, lines = client_logger("consumer")
    consumer = Consumer({"bootstrap.servers": cluster.address, "group.id": "survivors",
                         "client.rack": "r", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False,
                         "max.partition.fetch.bytes": 512, "debug": "fetch",
                         "logger": logger})
    consumer.subscribe(["survives"])
    seen = []
    deadline = time.time() + 60
    killed = False
    while len(set(seen)) < 400 and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is None or message.error():
            continue
        seen.append(message.value())
        if len(seen) >= 100 and not killed:
            consumer.commit(asynchronous=False)
            cluster.kill9_node(READER)
            killed = True
    consumer.close()
    assert killed
    assert set(seen) == {b"v%d" % i for i in range(400)}, "nothing lost"
    # The reader comes back (and the fixture stops it cleanly).
    cluster.start_node(READER)


def test_consumers_bootstrapped_at_the_reader_join_groups_coordinated_by_a_writer(cluster):
    topic_with_records(cluster, "grouped", count=40)
    reader = cluster.addresses[READER - 1]
    consumer = Consumer({"bootstrap.servers": reader, "group.id": "at-reader",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["grouped"])
    got = 0
    deadline = time.time() + 30
    while got < 40 and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            got += 1
    assert got == 40
    consumer.commit(asynchronous=False)
    consumer.close()
    admin = AdminClient({"bootstrap.servers": reader})
    group = admin.describe_consumer_groups(["at-reader"])["at-reader"].result(10)
    assert group.coordinator.id in (1, 2)
    # kafka-python (Fetch v10: no rack, reads from the leaders), bootstrapped at the
    # reader, resumes where the group committed: nothing more to read.
    old = KafkaConsumer("grouped", bootstrap_servers=reader, group_id="at-reader",
                        auto_offset_reset="earliest", enable_auto_commit=False,
                        consumer_timeout_ms=5000)
    assert list(old) == []
    old.close()
    fresh = KafkaConsumer("grouped", bootstrap_servers=reader, group_id="kp-at-reader",
                          auto_offset_reset="earliest", enable_auto_commit=False,
                          consumer_timeout_ms=5000)
    assert sorted(r.value for r in fresh) == sorted(b"v%d" % i for i in range(40))
    fresh.commit()
    fresh.close()
