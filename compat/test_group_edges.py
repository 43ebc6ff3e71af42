"""Consumer-group edge cases that admin tools and clients rely on: the group's type in
ListGroups, a group whose members all left is Empty at once (and can be deleted),
static members restarting (the leader too) without a rebalance unless their topics
changed, and a cooperative member changing its subscription quickly."""

import time

from confluent_kafka import Consumer, ConsumerGroupState
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer
from kafka import TopicPartition as KPTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import NoError
from kafka.structs import OffsetAndMetadata

from test_groups import PARTITIONS, SETTINGS, Member, balanced, create, produce, wait_until


def group_listing(admin, group):
    listed = admin.list_consumer_groups().result(timeout=10)
    return {g.group_id: g for g in listed.valid}.get(group)


def test_group_type_and_emptiness_after_members_leave(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "kinds", 2)
    produce(broker, "kinds", [f"k{i}" for i in range(4)], partitions=2)
    admin = AdminClient({"bootstrap.servers": broker.address})
    kp = KafkaAdminClient(bootstrap_servers=broker.address)
    try:
        # A subscribing group, with a session far longer than the test waits.
        member = Member(broker, "kinds", "subscribers", session_ms=45000)
        wait_until(lambda: len(member.values()) >= 4, what="consumption", members=[member])
        assert not group_listing(admin, "subscribers").is_simple_consumer_group
        member.stop()
        # Members that leave say so: Empty within moments, not after the session.
        wait_until(lambda: admin.describe_consumer_groups(["subscribers"])["subscribers"]
                   .result(timeout=10).state == ConsumerGroupState.EMPTY,
                   timeout=5, what="the group to be empty at once")
        assert not group_listing(admin, "subscribers").is_simple_consumer_group, \
            "still a consumer group once empty"
        assert ("subscribers", "consumer") in kp.list_consumer_groups()

        # An offsets-only ("simple") group: a consumer that assigns and commits.
        simple = KafkaConsumer(bootstrap_servers=broker.address, group_id="offsets-only",
                               enable_auto_commit=False)
        simple.assign([KPTopicPartition("kinds", 0)])
        simple.commit({KPTopicPartition("kinds", 0): OffsetAndMetadata(1, "", -1)})
        simple.close()
        assert group_listing(admin, "offsets-only").is_simple_consumer_group
        assert ("offsets-only", "") in kp.list_consumer_groups()

        assert kp.delete_consumer_groups(["subscribers"]) == [("subscribers", NoError)]
        result = admin.delete_consumer_groups(["offsets-only"])["offsets-only"]
        result.result(timeout=10)
        assert group_listing(admin, "subscribers") is None
        assert group_listing(admin, "offsets-only") is None
    finally:
        kp.close()


def test_a_static_leader_restart_causes_no_rebalance(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "static-lead")
    first = Member(broker, "static-lead", "lead", instance="s1")
    wait_until(lambda: first.assignment() == PARTITIONS, what="the first member", members=[first])
    second = Member(broker, "static-lead", "lead", instance="s2")
    members = [first, second]
    try:
        wait_until(lambda: balanced(members), what="two static members", members=members)
        # The first member is the leader (the longest-standing); restart it.
        kept = first.assignment()
        seen = len(second.snapshot())
        first.kill()
        first = Member(broker, "static-lead", "lead", instance="s1")
        members = [first, second]
        wait_until(lambda: first.assignment() == kept, what="the leader's partitions back",
                   members=members)
        time.sleep(2)
        rebalances = [e for e in second.snapshot()[seen:] if e["event"] != "record"]
        assert rebalances == [], "the follower saw no rebalance"
        produce(broker, "static-lead", [f"v{i}" for i in range(60)])
        wait_until(lambda: len(first.values()) + len(second.values()) >= 60,
                   what="consumption", members=members)
    finally:
        for member in members:
            member.stop()


def test_a_static_member_restarting_with_other_topics_rebalances(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "static-a")
    create(broker, "static-b")
    first = Member(broker, "static-a", "moving", instance="m1")
    second = Member(broker, "static-a", "moving", instance="m2")
    members = [first, second]
    try:
        wait_until(lambda: balanced(members), what="two static members", members=members)
        second.kill()
        second = Member(broker, "static-b", "moving", instance="m2")
        members = [first, second]
        # The group must rebalance: the first member alone reads static-a now, and
        # the second gets static-b's partitions rather than its old ones.
        wait_until(lambda: first.assignment() == PARTITIONS and second.assignment() == PARTITIONS,
                   what="a rebalance for the new subscription", members=members)
    finally:
        for member in members:
            member.stop()


def test_quick_cooperative_subscription_changes_converge(make_broker):
    broker = make_broker(*SETTINGS)
    for topic in ("sub-1", "sub-2", "sub-3"):
        create(broker, topic, 4)

    def consumer():
        return Consumer({"bootstrap.servers": broker.address, "group.id": "changing",
                         "partition.assignment.strategy": "cooperative-sticky",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 200,
                         "enable.auto.commit": False})

    steady, changing = consumer(), consumer()
    steady.subscribe(["sub-1", "sub-2", "sub-3"])
    changing.subscribe(["sub-1"])
    try:
        def poll(seconds):
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                steady.poll(0.02)
                changing.poll(0.02)

        poll(3)
        for topics in (["sub-2"], ["sub-1", "sub-2"], ["sub-3"], ["sub-2", "sub-3"], ["sub-3"]):
            changing.subscribe(topics)
            poll(0.3)

        def owned(c):
            return {(tp.topic, tp.partition) for tp in c.assignment()}

        every = {(t, p) for t in ("sub-1", "sub-2", "sub-3") for p in range(4)}

        def converged():
            a, b = owned(steady), owned(changing)
            return not a & b and a | b == every and b and all(t == "sub-3" for t, _ in b)

        deadline = time.monotonic() + 45
        while time.monotonic() < deadline and not converged():
            poll(0.2)
        a, b = owned(steady), owned(changing)
        assert not a & b, f"owned twice: {a & b}"
        assert a | b == every, f"not owned: {every - (a | b)}"
        assert converged(), f"steady {sorted(a)}, changing {sorted(b)}"
    finally:
        steady.close()
        changing.close()
