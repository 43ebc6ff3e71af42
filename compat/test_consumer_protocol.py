"""The consumer protocol (KIP-848, `group.protocol=consumer`) with confluent-kafka on
librdkafka 2.12+, each member in its own process (compat/group_member.py): the broker
assigns, members that keep partitions are never asked to give them up, a crash and a
clean leave hand partitions over, a static member comes back to its partitions, a
regular expression picks up a topic created later, and the admin APIs describe and
list the group by type."""

import time

import confluent_kafka
import pytest
from confluent_kafka import ConsumerGroupType
from confluent_kafka.admin import AdminClient

from test_groups import Member, balanced, consumed, create, produce, wait_until

# Short sessions and heartbeats for tests (Kafka's bounds are 45 s and 5 s).
SETTINGS = (
    "group.consumer.min.session.timeout.ms=1000",
    "group.consumer.session.timeout.ms=4000",
    "group.consumer.min.heartbeat.interval.ms=100",
    "group.consumer.heartbeat.interval.ms=300",
)


def member(broker, topic, group, **kwargs):
    return Member(broker, topic, group, protocol="consumer", assignor="uniform", **kwargs)


def revoked_events(m):
    return [e for e in m.snapshot() if e["event"] == "revoked"]


def revoked(m):
    return {p for e in m.snapshot() if e["event"] == "revoked" for p in e["partitions"]}


def test_the_client_is_new_enough():
    version = tuple(int(n) for n in confluent_kafka.libversion()[0].split(".")[:2])
    assert version >= (2, 12), confluent_kafka.libversion()


def test_members_share_partitions_keep_theirs_and_hand_over_on_crash_and_leave(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "kip848")
    members = [member(broker, "kip848", "workers") for _ in range(3)]
    try:
        wait_until(lambda: balanced(members), what="three members to share six partitions",
                   members=members)
        first = [f"a{i}" for i in range(300)]
        produce(broker, "kip848", first)
        wait_until(lambda: len(consumed(members)) >= 300, what="every record consumed",
                   members=members)
        time.sleep(0.5)
        assert sorted(consumed(members)) == sorted(first), "each record by exactly one member"

        # A fourth member: the others give up only what moves to it.
        kept = [m.assignment() for m in members]
        members.append(member(broker, "kip848", "workers"))
        wait_until(lambda: balanced(members) and all(m.assignment() for m in members),
                   what="four members to share six partitions", members=members)
        for old, had in zip(members[:3], kept):
            still = old.assignment()
            assert not (revoked(old) & still), "a kept partition was revoked"
            assert still <= had, "an old member gained a partition it did not have"

        # A crash: the partitions move after the session (4 s).
        crashed = members.pop(0)
        crashed.kill()
        wait_until(lambda: balanced(members), timeout=30,
                   what="the crashed member's partitions to move", members=members)
        second = [f"b{i}" for i in range(120)]
        produce(broker, "kip848", second)
        wait_until(lambda: set(second) <= set(consumed(members)), what="records after the crash",
                   members=members)

        # A clean leave hands over well before a session would end.
        leaving = members.pop()
        started = time.time()
        leaving.stop()
        wait_until(lambda: balanced(members), what="the leaver's partitions to move",
                   members=members)
        assert time.time() - started < 3.5
    finally:
        for m in members:
            m.stop()


def test_members_resume_from_committed_offsets(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "resume", partitions=2)
    produce(broker, "resume", [f"r{i}" for i in range(50)], partitions=2)
    first = member(broker, "resume", "resumers")
    try:
        wait_until(lambda: len(first.values()) >= 50, what="the first 50", members=[first])
    finally:
        first.stop()
    produce(broker, "resume", [f"s{i}" for i in range(10)], partitions=2)
    second = member(broker, "resume", "resumers")
    try:
        wait_until(lambda: len(second.values()) >= 10, what="the next 10", members=[second])
        time.sleep(0.5)
        assert sorted(second.values()) == sorted(f"s{i}" for i in range(10))
    finally:
        second.stop()


def test_a_static_member_comes_back_to_its_partitions(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "static848")
    staying = member(broker, "static848", "statics", instance="stay")
    restarting = member(broker, "static848", "statics", instance="restart")
    members = [staying, restarting]
    try:
        wait_until(lambda: balanced(members), what="two static members to share",
                   members=members)
        had = restarting.assignment()
        kept = staying.assignment()
        revoked_before = revoked_events(staying)
        restarting.stop()  # a static member leaves "for a while" (epoch -2)
        restarting = member(broker, "static848", "statics", instance="restart")
        members = [staying, restarting]
        wait_until(lambda: restarting.assignment() == had, what="its partitions back",
                   members=members)
        assert staying.assignment() == kept
        assert revoked_events(staying) == revoked_before, "the other member gave nothing up"
    finally:
        for m in members:
            m.stop()


def test_a_regular_expression_picks_up_a_topic_created_later(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "rx-first", partitions=1)
    watcher = member(broker, "^rx-.*", "regexes")
    try:
        wait_until(lambda: watcher.assignment() == {0}, what="the first topic's partition",
                   members=[watcher])
        create(broker, "rx-second", partitions=2)
        produce(broker, "rx-second", ["x0", "x1", "x2", "x3"], partitions=2)
        wait_until(lambda: {"x0", "x1", "x2", "x3"} <= set(watcher.values()),
                   what="records of the new topic", members=[watcher])
    finally:
        watcher.stop()


def test_admin_describes_and_lists_a_consumer_protocol_group(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "described", partitions=3)
    members = [member(broker, "described", "described-group") for _ in range(2)]
    admin = AdminClient({"bootstrap.servers": broker.address})
    try:
        wait_until(lambda: balanced(members, {0, 1, 2}), what="two members to share",
                   members=members)
        described = admin.describe_consumer_groups(["described-group"])["described-group"]
        group = described.result(timeout=10)
        assert group.type == ConsumerGroupType.CONSUMER
        assert len(group.members) == 2
        assigned = sorted(tp.partition for m in group.members
                          for tp in m.assignment.topic_partitions)
        assert assigned == [0, 1, 2]

        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(timeout=10)
        assert [g.group_id for g in listed.valid] == ["described-group"]
        classic = admin.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result(timeout=10)
        assert "described-group" not in [g.group_id for g in classic.valid]
    finally:
        for m in members:
            m.stop()


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_either_assignor_can_be_asked_for(make_broker, assignor):
    broker = make_broker(*SETTINGS)
    create(broker, f"assign-{assignor}", partitions=4)
    members = [Member(broker, f"assign-{assignor}", f"by-{assignor}", protocol="consumer",
                      assignor=assignor) for _ in range(2)]
    try:
        wait_until(lambda: balanced(members, {0, 1, 2, 3}), what="two members to share",
                   members=members)
        if assignor == "range":
            assert sorted(sorted(m.assignment()) for m in members) == [[0, 1], [2, 3]]
    finally:
        for m in members:
            m.stop()
