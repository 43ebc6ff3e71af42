"""Consumer groups with real clients, each member in its own process
(compat/group_member.py): assignment, exactly-once delivery without failures, crash
and clean leave, committed offsets across restarts, static membership, cooperative
rebalancing, and the group admin APIs."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

HERE = os.path.dirname(os.path.abspath(__file__))
# Fast rebalances for tests: a short initial delay, short sessions allowed.
SETTINGS = ("group.initial.rebalance.delay.ms=200", "group.min.session.timeout.ms=1000")
PARTITIONS = set(range(6))


def wait_until(predicate, timeout=30, what="condition", members=()):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    logs = "".join(member.log_tail() for member in members)
    raise AssertionError(f"timed out waiting for {what}{logs}")


class Member:
    """A group member process and what it printed."""

    def __init__(self, broker, topic, group, client="confluent", instance=None,
                 assignor="range", session_ms=6000, protocol="classic"):
        args = [sys.executable, os.path.join(HERE, "group_member.py"), "--client", client,
                "--bootstrap", broker.address, "--topic", topic, "--group", group,
                "--assignor", assignor, "--session-ms", str(session_ms),
                "--protocol", protocol]
        if instance:
            args += ["--instance", instance]
        self.log = open(os.path.join(broker.data_dir, f"member-{group}-{id(self)}.log"), "w")
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.events = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            with self.lock:
                self.events.append(json.loads(line))

    def log_tail(self):
        self.log.flush()
        with open(self.log.name) as log:
            tail = log.read()[-3000:]
        return f"\n--- member log ({self.process.args[-1]}):\n{tail}\n--- events: {self.snapshot()[-10:]}"

    def snapshot(self):
        with self.lock:
            return list(self.events)

    def assignment(self):
        current = set()
        for event in self.snapshot():
            if event["event"] == "assigned":
                current |= set(event["partitions"])
            elif event["event"] == "revoked":
                current -= set(event["partitions"])
        return current

    def values(self):
        return [e["value"] for e in self.snapshot() if e["event"] == "record"]

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def create(broker, topic, partitions=6):
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=10)


def produce(broker, topic, values, partitions=6):
    producer = Producer({"bootstrap.servers": broker.address, "acks": "all", "linger.ms": 5})
    for i, value in enumerate(values):
        producer.produce(topic, value=value.encode(), partition=i % partitions)
    assert producer.flush(10) == 0


def balanced(members, partitions=PARTITIONS):
    """Every partition assigned to exactly one of `members`, each member some."""
    assignments = [m.assignment() for m in members]
    union = set().union(*assignments)
    return union == partitions and sum(map(len, assignments)) == len(partitions) and all(assignments)


def consumed(members):
    return [v for m in members for v in m.values()]


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_members_share_partitions_survive_a_crash_and_a_clean_leave(make_broker, client):
    broker = make_broker(*SETTINGS)
    create(broker, "shared")
    members = [Member(broker, "shared", "workers", client=client) for _ in range(3)]
    try:
        wait_until(lambda: balanced(members), what="three members to share six partitions")
        first = [f"a{i}" for i in range(300)]
        produce(broker, "shared", first)
        wait_until(lambda: len(consumed(members)) >= 300, what="every record consumed")
        time.sleep(0.5)
        assert sorted(consumed(members)) == sorted(first), "each record by exactly one member"

        # A crash: the dead member's partitions move after its session timeout, and
        # the others continue from its committed offsets.
        crashed = members.pop()
        before = [len(m.values()) for m in members]
        crashed.kill()
        wait_until(lambda: balanced(members), what="the crashed member's partitions to move")
        second = [f"b{i}" for i in range(120)]
        produce(broker, "shared", second)
        wait_until(lambda: set(second) <= set(consumed(members)), what="records after the crash")
        # It committed after every record: at most its one in-flight record per
        # partition is read again.
        read_again = [v for m, n in zip(members, before) for v in m.values()[n:] if v.startswith("a")]
        assert len(read_again) <= 2, read_again

        # A clean leave rebalances at once, well before the 6 s session timeout.
        leaving = members.pop()
        started = time.time()
        leaving.stop()
        wait_until(lambda: members[0].assignment() == PARTITIONS, timeout=5,
                   what="the remaining member to take every partition")
        assert time.time() - started < 5
    finally:
        for member in members:
            member.stop()


def test_kafka_python_members_resume_from_committed_offsets(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "resume")
    members = [Member(broker, "resume", "kp", client="kafka-python") for _ in range(2)]
    try:
        wait_until(lambda: balanced(members), what="two kafka-python members to share")
        produce(broker, "resume", [f"x{i}" for i in range(60)])
        wait_until(lambda: len(consumed(members)) >= 60, what="kafka-python consumption")
        assert sorted(consumed(members)) == sorted(f"x{i}" for i in range(60))
    finally:
        for member in members:
            member.stop()
    # The group restarts: only records produced since are read.
    produce(broker, "resume", [f"y{i}" for i in range(30)])
    again = Member(broker, "resume", "kp", client="confluent")
    try:
        wait_until(lambda: len(again.values()) >= 30, what="the restarted group")
        time.sleep(0.5)
        assert sorted(again.values()) == sorted(f"y{i}" for i in range(30))
    finally:
        again.stop()


def test_offsets_survive_a_broker_restart(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "durable", 2)
    produce(broker, "durable", [f"d{i}" for i in range(20)], partitions=2)
    member = Member(broker, "durable", "keeper")
    wait_until(lambda: len(member.values()) >= 20, what="consumption")
    member.stop()
    broker.stop()
    broker.start()
    admin = AdminClient({"bootstrap.servers": broker.address})
    from confluent_kafka import ConsumerGroupTopicPartitions
    request = ConsumerGroupTopicPartitions("keeper", [TopicPartition("durable", 0), TopicPartition("durable", 1)])
    result = admin.list_consumer_group_offsets([request])["keeper"].result(timeout=10)
    assert sorted(tp.offset for tp in result.topic_partitions) == [10, 10]
    produce(broker, "durable", [f"e{i}" for i in range(4)], partitions=2)
    member = Member(broker, "durable", "keeper")
    try:
        wait_until(lambda: len(member.values()) >= 4, what="consumption after the restart")
        time.sleep(0.5)
        assert sorted(member.values()) == sorted(f"e{i}" for i in range(4))
        # The broker restarts under a running member: it rejoins and carries on.
        broker.stop()
        broker.start()
        produce(broker, "durable", [f"f{i}" for i in range(4)], partitions=2)
        wait_until(lambda: {f"f{i}" for i in range(4)} <= set(member.values()), timeout=60,
                   what="consumption after a restart under the member", members=[member])
        # Group state is not kept across a restart: a commit made before the member
        # rejoined may fail, so a record can come twice (at least once), none lost.
        assert set(member.values()[4:]) == {f"f{i}" for i in range(4)}
    finally:
        member.stop()


def test_a_static_member_restart_causes_no_rebalance(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "static")
    leader = Member(broker, "static", "statics", instance="s1")
    wait_until(lambda: leader.assignment() == PARTITIONS, what="the first member")
    other = Member(broker, "static", "statics", instance="s2")
    try:
        wait_until(lambda: balanced([leader, other]), what="two static members")
        kept = other.assignment()
        seen = len(leader.snapshot())
        other.kill()
        other = Member(broker, "static", "statics", instance="s2")
        wait_until(lambda: other.assignment() == kept, what="the restarted instance's partitions")
        time.sleep(2)
        rebalances = [e for e in leader.snapshot()[seen:] if e["event"] != "record"]
        assert rebalances == [], "the other member saw no rebalance"
        produce(broker, "static", [f"s{i}" for i in range(60)])
        wait_until(lambda: len(consumed([leader, other])) >= 60, what="consumption")
    finally:
        leader.stop()
        other.stop()


def test_a_cooperative_group_grows_without_revoking_partitions_that_stay(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "coop")
    first = Member(broker, "coop", "coop", assignor="cooperative-sticky")
    members = [first]
    try:
        wait_until(lambda: first.assignment() == PARTITIONS, what="the first member")
        members += [Member(broker, "coop", "coop", assignor="cooperative-sticky") for _ in range(2)]
        wait_until(lambda: balanced(members), what="three cooperative members")
        time.sleep(1)
        assert balanced(members)
        revoked = [set(e["partitions"]) for e in first.snapshot() if e["event"] == "revoked"]
        assert revoked, "some partitions moved away from the first member"
        assert all(len(r) < 6 for r in revoked), "never everything at once (no eager revoke)"
        assert not set().union(*revoked) & first.assignment(), "kept partitions never revoked"
        produce(broker, "coop", [f"c{i}" for i in range(60)])
        wait_until(lambda: len(consumed(members)) >= 60, what="consumption")
        time.sleep(0.5)
        assert sorted(consumed(members)) == sorted(f"c{i}" for i in range(60))
    finally:
        for member in members:
            member.stop()


def test_two_groups_on_one_topic_progress_independently(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "both", 2)
    produce(broker, "both", [f"v{i}" for i in range(40)], partitions=2)
    one = Member(broker, "both", "one")
    two = Member(broker, "both", "two", client="kafka-python")
    try:
        wait_until(lambda: len(one.values()) >= 40 and len(two.values()) >= 40, what="both groups")
        one.stop()
        produce(broker, "both", [f"w{i}" for i in range(10)], partitions=2)
        wait_until(lambda: len(two.values()) >= 50, what="the second group alone")
    finally:
        one.stop()
        two.stop()
    from kafka.admin import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=broker.address)
    committed = {g: sum(o.offset for o in admin.list_consumer_group_offsets(g).values())
                 for g in ("one", "two")}
    admin.close()
    assert committed == {"one": 40, "two": 50}


def test_groups_are_listed_described_and_deleted(make_broker):
    from confluent_kafka import ConsumerGroupState, KafkaException
    from kafka.admin import KafkaAdminClient

    broker = make_broker(*SETTINGS)
    create(broker, "admin", 2)
    produce(broker, "admin", [f"m{i}" for i in range(10)], partitions=2)
    member = Member(broker, "admin", "watched")
    admin = AdminClient({"bootstrap.servers": broker.address})
    try:
        wait_until(lambda: len(member.values()) >= 10, what="consumption")
        listed = admin.list_consumer_groups().result(timeout=10)
        states = {g.group_id: g.state for g in listed.valid}
        assert states == {"watched": ConsumerGroupState.STABLE}
        described = admin.describe_consumer_groups(["watched"])["watched"].result(timeout=10)
        assert described.state == ConsumerGroupState.STABLE
        assert described.partition_assignor == "range"
        assert len(described.members) == 1
        owned = {tp.partition for tp in described.members[0].assignment.topic_partitions}
        assert owned == {0, 1}

        kp = KafkaAdminClient(bootstrap_servers=broker.address)
        assert ("watched", "consumer") in kp.list_consumer_groups()
        kp_described = kp.describe_consumer_groups(["watched"])[0]
        assert kp_described.state == "Stable" and len(kp_described.members) == 1

        # A group with members cannot be deleted.
        failed = admin.delete_consumer_groups(["watched"])["watched"]
        try:
            failed.result(timeout=10)
            raise AssertionError("deleting a group with members succeeded")
        except KafkaException as error:
            assert error.args[0].name() == "NON_EMPTY_GROUP"
    finally:
        member.stop()
    wait_until(lambda: admin.describe_consumer_groups(["watched"])["watched"].result(timeout=10).state
               == ConsumerGroupState.EMPTY, what="the group to be empty")
    from kafka.errors import NoError
    assert kp.delete_consumer_groups(["watched"]) == [("watched", NoError)]
    listed = admin.list_consumer_groups().result(timeout=10)
    assert [g.group_id for g in listed.valid] == []
    assert kp.list_consumer_group_offsets("watched") == {}
    kp.close()


def wait_for_assignment(consumer, topic, count, timeout=30):
    """Polls until `consumer` holds exactly `count` partitions, all of `topic`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        consumer.poll(0.1)
        held = consumer.assignment()
        if len(held) == count and all(tp.topic == topic for tp in held):
            return
    raise AssertionError(f"never settled on {count} of {topic}: holds {consumer.assignment()}")


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
@pytest.mark.parametrize("variation", range(1, 7))
def test_rapid_subscription_changes_settle_on_the_last_subscription(make_broker, protocol, variation):
    """librdkafka's 0113 s_subscribe_when_rebalancing: subscribed to one topic, the
    consumer subscribes to a second and at once to a third (or unsubscribes) while the
    rebalance for the second is under way; it must end with exactly the last
    subscription's partition. Even variations cache every topic's metadata first; 3
    and 5 poll once between the changes; 5 and 6 unsubscribe."""
    from confluent_kafka import Consumer
    broker = make_broker(*SETTINGS)
    topics = [f"rapid-{variation}-{n}" for n in range(3)]
    admin = AdminClient({"bootstrap.servers": broker.address})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(timeout=10)
    settings = {"bootstrap.servers": broker.address, "group.id": f"rapid-{protocol}-{variation}",
                "group.protocol": protocol}
    if protocol == "classic":
        settings["partition.assignment.strategy"] = "cooperative-sticky"
    consumer = Consumer(settings)
    try:
        if variation % 2 == 0:
            consumer.list_topics(timeout=10)
        consumer.subscribe([topics[0]])
        wait_for_assignment(consumer, topics[0], 1)
        consumer.subscribe([topics[1]])
        if variation in (3, 5):
            consumer.poll(0.5)
        if variation < 5:
            consumer.subscribe([topics[2]])
            wait_for_assignment(consumer, topics[2], 1)
        else:
            consumer.unsubscribe()
            wait_for_assignment(consumer, None, 0)
    finally:
        consumer.close()


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_group_is_deleted_right_after_its_consumers_closed(make_broker, protocol):
    """librdkafka's 0081 DeleteGroups: each group's one consumer reads the topic and
    closes; DeleteGroups at once deletes them (kafka-python's consumer too), and names
    an unknown group GROUP_ID_NOT_FOUND."""
    from confluent_kafka import Consumer, KafkaException
    from kafka import KafkaConsumer
    broker = make_broker(*SETTINGS)
    create(broker, "closing", 1)
    produce(broker, "closing", [f"m{i}" for i in range(100)], partitions=1)
    groups = [f"closing-{protocol}-{n}" for n in range(2)]
    for group in groups:
        consumer = Consumer({"bootstrap.servers": broker.address, "group.id": group,
                             "group.protocol": protocol, "auto.offset.reset": "earliest"})
        consumer.subscribe(["closing"])
        read, deadline = 0, time.time() + 30
        while read < 100 and time.time() < deadline:
            message = consumer.poll(0.5)
            read += message is not None and not message.error()
        consumer.close()
        assert read == 100
    kp_group = f"closing-kp-{protocol}"
    kp = KafkaConsumer("closing", bootstrap_servers=broker.address, group_id=kp_group,
                       auto_offset_reset="earliest", consumer_timeout_ms=5000)
    assert len(list(kp)) == 100
    kp.close()
    admin = AdminClient({"bootstrap.servers": broker.address})
    outcomes = {}
    for group, future in admin.delete_consumer_groups(groups + [kp_group, "never-was"]).items():
        try:
            future.result(timeout=10)
            outcomes[group] = "deleted"
        except KafkaException as error:
            outcomes[group] = error.args[0].name()
    assert outcomes == {groups[0]: "deleted", groups[1]: "deleted", kp_group: "deleted",
                        "never-was": "GROUP_ID_NOT_FOUND"}
