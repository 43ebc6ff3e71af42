"""Lanes with real clients (docs/lanes.md): confluent-kafka (librdkafka) and
kafka-python producers and consumers join a lane by their client.id alone
(`app;lane=X`). A lane producer's records get the `spool.lane` header; a lane's
consumers see only its records; a group's members in a lane keep their own committed
offsets; a base consumer also gets a lane's records while its group has no live
member in that lane (fallback), and never with `lane.fallback.enable=false`.
Run in embedded mode and on a cluster (the group's base part and its lane parts may
have different coordinators)."""

import json
import re
import subprocess
import time
import urllib.request
import uuid

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaPartition
from kafka.structs import OffsetAndMetadata
from kafka.admin import ConfigResource as KPConfigResource
from kafka.admin import ConfigResourceType

from conftest import SPOOL_BIN

LANE = "spool.lane"


def create(broker, name, partitions=1):
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)


def confluent_produce(broker, topic, client_id, values, headers=None, linger=0):
    producer = Producer({"bootstrap.servers": broker.address, "client.id": client_id,
                         "linger.ms": linger, "enable.idempotence": True})
    for value in values:
        producer.produce(topic, value=value.encode(), partition=0,
                         headers=list((headers or {}).items()))
    assert producer.flush(30) == 0


def kafka_python_produce(broker, topic, client_id, values, headers=None):
    producer = KafkaProducer(bootstrap_servers=broker.address, client_id=client_id,
                             compression_type="gzip", linger_ms=20)
    for value in values:
        producer.send(topic, value=value.encode(), partition=0,
                      headers=[(k, v.encode()) for k, v in (headers or {}).items()])
    producer.flush(30)
    producer.close()


def lane_of(headers):
    found = [value for key, value in (headers or []) if key == LANE]
    return found[-1].decode() if found and found[-1] is not None else None


def confluent_read_all(broker, topic, client_id, quiet=2.0):
    """(offset, value, lane) of everything a consumer assigned from the start gets."""
    consumer = Consumer({"bootstrap.servers": broker.address, "client.id": client_id,
                         "group.id": f"unused-{uuid.uuid4().hex}", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got, deadline, last = [], time.time() + 30, time.time()
    while time.time() < deadline and time.time() - last < quiet:
        message = consumer.poll(0.2)
        if message is None or message.error():
            continue
        got.append((message.offset(), message.value().decode(), lane_of(message.headers())))
        last = time.time()
    consumer.close()
    return got


def kafka_python_read_all(broker, topic, client_id, quiet=2.0):
    consumer = KafkaConsumer(bootstrap_servers=broker.address, client_id=client_id,
                             enable_auto_commit=False, consumer_timeout_ms=int(quiet * 1000))
    partition = KafkaPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    got = [(m.offset, m.value.decode(), lane_of(m.headers)) for m in consumer]
    consumer.close()
    return got


def metric_series(broker, name):
    """Every broker's series of `name`: a list (one per broker) of {labels: value}."""
    out = []
    for url in broker.admin_urls:
        with urllib.request.urlopen(url + "/metrics", timeout=5) as answer:
            text = answer.read().decode()
        series = {}
        for line in text.splitlines():
            if line.startswith(name + "{"):
                labels, value = line[len(name):].rsplit(" ", 1)
                key = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', labels)))
                series[key] = float(value)
        out.append(series)
    return out


def wait_for_presence(broker, group, lanes, base_clients, timeout=30, meanwhile=lambda: None):
    """Until every broker knows `group`'s members in each lane of `lanes` (lane ->
    members) and `base_clients` clients of its base members; `meanwhile` keeps the
    members polling."""
    deadline = time.time() + timeout
    want_lanes = {(("group", group), ("lane", lane)): float(n) for lane, n in lanes.items()}
    while True:
        members = metric_series(broker, "spool_lane_members")
        clients = metric_series(broker, "spool_lane_base_clients")
        ok = all(
            {k: v for k, v in m.items() if dict(k)["group"] == group} == want_lanes
            and c.get((("group", group),), 0.0) == float(base_clients)
            for m, c in zip(members, clients))
        if ok:
            return
        assert time.time() < deadline, f"lane presence not seen: {members} {clients}"
        meanwhile()


def test_lane_producers_records_reach_only_their_lanes_consumers(broker):
    topic = f"lanes-{uuid.uuid4().hex[:8]}"
    create(broker, topic)
    confluent_produce(broker, topic, "shop", [f"base-{i}" for i in range(3)])
    # librdkafka in lane ppe, no header: the broker adds it.
    confluent_produce(broker, topic, "shop;lane=ppe", [f"ppe-{i}" for i in range(3)], linger=20)
    # kafka-python in lane boe, gzip; a record that names its lane keeps it.
    kafka_python_produce(broker, topic, "shop;lane=boe", [f"boe-{i}" for i in range(3)])
    kafka_python_produce(broker, topic, "shop;lane=boe", ["ppe-from-boe"], {LANE: "ppe"})
    # A base producer's batch mixing base records and one of lane boe.
    producer = Producer({"bootstrap.servers": broker.address, "client.id": "shop",
                         "linger.ms": 100})
    producer.produce(topic, value=b"base-mixed-0", partition=0)
    producer.produce(topic, value=b"boe-mixed", partition=0, headers=[(LANE, b"boe")])
    producer.produce(topic, value=b"base-mixed-1", partition=0)
    assert producer.flush(30) == 0

    everything = confluent_read_all(broker, topic, "auditor")
    assert [offset for offset, _, _ in everything] == list(range(13)), \
        "a base consumer of no group sees every lane (nothing stands it out)"
    expected_lanes = {value: lane for _, value, lane in everything}
    assert all(expected_lanes[f"ppe-{i}"] == "ppe" for i in range(3)), everything
    assert all(expected_lanes[f"boe-{i}"] == "boe" for i in range(3)), everything
    assert expected_lanes["ppe-from-boe"] == "ppe"
    assert all(expected_lanes[f"base-{i}"] is None for i in range(3))

    def expected(lane):
        return [(offset, value, l) for offset, value, l in everything if l == lane]

    for read in (confluent_read_all, kafka_python_read_all):
        assert read(broker, topic, "tester;lane=ppe") == expected("ppe"), read.__name__
        assert read(broker, topic, "tester;lane=boe") == expected("boe"), read.__name__
        assert read(broker, topic, "tester;lane=none") == [], read.__name__

    stamped = metric_series(broker, "spool_lane_batches_stamped_total")
    by_lane = {}
    for series in stamped:
        for labels, value in series.items():
            labels = dict(labels)
            if labels["topic"] == topic:
                by_lane[labels["lane"]] = by_lane.get(labels["lane"], 0) + value
    assert by_lane.get("ppe", 0) >= 1 and by_lane.get("boe", 0) >= 1, stamped


class BaseMember:
    """A confluent-kafka member of a group, in the base lane."""

    def __init__(self, broker, group, topic, client_id):
        self.consumer = Consumer({"bootstrap.servers": broker.address, "client.id": client_id,
                                  "group.id": group, "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        self.consumer.subscribe([topic])
        self.values = []

    def poll_until(self, wanted, timeout=30, quiet=1.5):
        """Polls until `wanted` values are in, then for `quiet` seconds more."""
        deadline = time.time() + timeout
        done_at = None
        while time.time() < deadline:
            message = self.consumer.poll(0.1)
            if message is not None and not message.error():
                self.values.append(message.value().decode())
                self.consumer.commit(message, asynchronous=False)
            if done_at is None and set(wanted) <= set(self.values):
                done_at = time.time()
            if done_at is not None and time.time() - done_at >= quiet:
                break
        return self.values


def test_a_groups_lane_members_keep_their_own_offsets_and_the_base_falls_back(broker):
    topic = f"lanes-{uuid.uuid4().hex[:8]}"
    group = f"svc-{uuid.uuid4().hex[:8]}"
    create(broker, topic)
    confluent_produce(broker, topic, "svc-producer", ["base-0"])
    base = BaseMember(broker, group, topic, f"{group}-app")
    assert base.poll_until(["base-0"]) == ["base-0"]

    # The same group deployed in lane ppe, with kafka-python.
    lane_member = KafkaConsumer(topic, bootstrap_servers=broker.address, group_id=group,
                                client_id=f"{group}-app;lane=ppe", auto_offset_reset="earliest",
                                enable_auto_commit=False, fetch_max_wait_ms=100)
    lane_values = []

    def poll_both():
        base.poll_until([], timeout=0.1, quiet=0)
        for records in lane_member.poll(timeout_ms=100).values():
            lane_values.extend((r.offset, r.value.decode()) for r in records)

    wait_for_presence(broker, group, {"ppe": 1}, base_clients=1, meanwhile=poll_both)

    confluent_produce(broker, topic, "svc-producer", ["base-1", "base-2"])
    confluent_produce(broker, topic, "svc-producer;lane=ppe", ["ppe-0", "ppe-1"])
    kafka_python_produce(broker, topic, "svc-producer;lane=boe", ["boe-0"])

    deadline = time.time() + 30
    while len(lane_values) < 2 and time.time() < deadline:
        for records in lane_member.poll(timeout_ms=200).values():
            lane_values += [(r.offset, r.value.decode()) for r in records]
    partition = KafkaPartition(topic, 0)
    lane_member.commit({partition: OffsetAndMetadata(5, "", -1)})
    assert lane_values == [(3, "ppe-0"), (4, "ppe-1")], \
        "the lane's part started at its own earliest, and sees its lane only"

    # The base member sees the base and lane boe (no boe member: fallback), not ppe.
    got = base.poll_until(["base-1", "base-2", "boe-0"])
    assert got == ["base-0", "base-1", "base-2", "boe-0"], got

    # Offsets kept apart: each part committed its own; the lane's part is its own group.
    admin = KafkaAdminClient(bootstrap_servers=broker.address)
    base_committed = admin.list_consumer_group_offsets(group)
    lane_committed = admin.list_consumer_group_offsets(f"{group};lane=ppe")
    assert base_committed[partition].offset == 6, base_committed
    assert lane_committed[partition].offset == 5, lane_committed
    # The lane member reads its own group's offsets by the group's name.
    assert lane_member.committed(partition) == 5

    # The CLI describes the group with its lane part.
    run = subprocess.run([SPOOL_BIN, "group", "describe", group, "--format", "json",
                          "--brokers", broker.address], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    described = json.loads(run.stdout)
    assert [(lane["lane"], lane["group"], lane["members"]) for lane in described["lanes"]] == \
        [("ppe", f"{group};lane=ppe", 1)], described
    assert [m["client_id"] for m in described["members"]] == [f"{group}-app"]

    # The lane's member leaves: the base member takes lane ppe's records again.
    lane_member.close()
    wait_for_presence(broker, group, {}, base_clients=0,
                      meanwhile=lambda: base.poll_until([], timeout=0.1, quiet=0))
    confluent_produce(broker, topic, "svc-producer;lane=ppe", ["ppe-2"])
    got = base.poll_until(["ppe-2"])
    assert got[-1] == "ppe-2" and "ppe-0" not in got, got
    base.consumer.close()


def set_everywhere(broker, name, value):
    """Sets broker setting `name` cluster-wide (kafka-python's AlterConfigs of the
    default broker resource) and waits until every broker has it."""
    kp = KafkaAdminClient(bootstrap_servers=broker.address)
    response = kp.alter_configs([KPConfigResource(
        ConfigResourceType.BROKER, "", configs={name: value})])
    assert [resource[0] for resource in response.resources] == [0], response
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.list_topics(timeout=30)
    deadline = time.time() + 20
    for node in broker.node_ids:
        while True:
            resource = ConfigResource(ResourceType.BROKER, node)
            entries = admin.describe_configs([resource])[resource].result(30)
            if entries[name].value == value:
                break
            assert time.time() < deadline, f"broker {node} kept the old {name}"
            time.sleep(0.1)


def test_without_fallback_a_base_consumer_never_sees_a_lane(broker):
    topic = f"lanes-{uuid.uuid4().hex[:8]}"
    create(broker, topic)
    confluent_produce(broker, topic, "shop", ["base-0"])
    confluent_produce(broker, topic, "shop;lane=ppe", ["ppe-0"])
    confluent_produce(broker, topic, "shop", ["base-1"])
    set_everywhere(broker, "lane.fallback.enable", "false")
    try:
        for read in (confluent_read_all, kafka_python_read_all):
            assert [(o, v) for o, v, _ in read(broker, topic, "auditor")] == \
                [(0, "base-0"), (2, "base-1")], read.__name__
            assert [(o, v) for o, v, _ in read(broker, topic, "t;lane=ppe")] == [(1, "ppe-0")]
    finally:
        set_everywhere(broker, "lane.fallback.enable", "true")
    assert [v for _, v, _ in confluent_read_all(broker, topic, "auditor")] == \
        ["base-0", "ppe-0", "base-1"]


def test_a_bad_lane_pattern_is_refused_and_a_custom_one_names_lanes(broker):
    kp = KafkaAdminClient(bootstrap_servers=broker.address)
    refused = kp.alter_configs([KPConfigResource(
        ConfigResourceType.BROKER, "", configs={"lane.client.id.pattern": "no-group"})])
    assert refused.resources[0][0] == KafkaError.INVALID_CONFIG, refused
    topic = f"lanes-{uuid.uuid4().hex[:8]}"
    create(broker, topic)
    set_everywhere(broker, "lane.client.id.pattern", "^env-([a-z]+)/")
    try:
        confluent_produce(broker, topic, "shop;lane=ppe", ["not-a-lane-now"])
        confluent_produce(broker, topic, "env-boe/app", ["boe"])
        assert [(v, lane) for _, v, lane in confluent_read_all(broker, topic, "env-boe/reader")] \
            == [("boe", "boe")]
        assert [(v, lane) for _, v, lane in confluent_read_all(broker, topic, "reader")] \
            == [("not-a-lane-now", None), ("boe", "boe")]
    finally:
        set_everywhere(broker, "lane.client.id.pattern", ";lane=([A-Za-z0-9._-]+)")


def test_a_consumer_protocol_lane_member_is_its_groups_lane_part(broker):
    """KIP-848's ConsumerGroupHeartbeat from a lane client joins the lane's part."""
    topic = f"lanes-{uuid.uuid4().hex[:8]}"
    group = f"kip848-{uuid.uuid4().hex[:8]}"
    create(broker, topic)
    base = BaseMember(broker, group, topic, f"{group}-app")
    lane_member = Consumer({"bootstrap.servers": broker.address, "group.id": group,
                            "client.id": f"{group}-app;lane=ppe", "group.protocol": "consumer",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    lane_member.subscribe([topic])
    lane_values = []

    def poll_both():
        base.poll_until([], timeout=0.1, quiet=0)
        message = lane_member.poll(0.1)
        if message is not None and not message.error():
            lane_values.append(message.value().decode())

    wait_for_presence(broker, group, {"ppe": 1}, base_clients=1, meanwhile=poll_both)
    confluent_produce(broker, topic, "svc;lane=ppe", ["ppe-0"])
    confluent_produce(broker, topic, "svc", ["base-0"])
    deadline = time.time() + 30
    while lane_values != ["ppe-0"] and time.time() < deadline:
        poll_both()
    assert lane_values == ["ppe-0"]
    assert base.poll_until(["base-0"]) == ["base-0"]
    admin = AdminClient({"bootstrap.servers": broker.address})
    described = admin.describe_consumer_groups([f"{group};lane=ppe"])[f"{group};lane=ppe"].result(10)
    assert [m.client_id for m in described.members] == [f"{group}-app;lane=ppe"]
    lane_member.close()
    base.consumer.close()
