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

        # DescribeGroups answers for it too, as Kafka 4 does (kafka-python's admin
        # client knows only that API).
        described_classic = kafka_python_describe_groups(broker, "described-group")
        assert described_classic["state"] == "Stable"
        assert described_classic["protocol_type"] == "consumer"
        assert sorted(described_classic["assigned"]) == [0, 1, 2]

        # `spool group describe`: the type, the epochs, each member's assignment and target.
        detail = spool_group_describe(broker, "described-group")
        assert detail["group_type"] == "consumer"
        epochs = detail["consumer_protocol"]
        assert epochs["group_epoch"] >= 2 and epochs["assignment_epoch"] == epochs["group_epoch"]
        assert sorted(p for m in detail["members"] for p in m["assignment"]["described"]) == [0, 1, 2]
        assert all(m["protocol"] == "consumer" and m["member_epoch"] == epochs["group_epoch"]
                   for m in epochs["members"])

        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(timeout=10)
        assert [g.group_id for g in listed.valid] == ["described-group"]
        classic = admin.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result(timeout=10)
        assert "described-group" not in [g.group_id for g in classic.valid]
    finally:
        for m in members:
            m.stop()


def kafka_python_describe_groups(broker, group):
    """DescribeGroups through kafka-python's admin client: state, protocol type and
    the partitions its members' assignments hold."""
    from kafka import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=broker.address)
    try:
        (described,) = admin.describe_consumer_groups([group])
        # kafka-python decodes the consumer protocol's assignment bytes itself.
        assigned = [tp.partition for member in described.members
                    for tp in member.member_assignment.partitions()]
        return {"state": described.state, "protocol_type": described.protocol_type,
                "assigned": assigned}
    finally:
        admin.close()


def spool_group_describe(broker, group):
    import json
    import subprocess
    from conftest import SPOOL_BIN
    run = subprocess.run([SPOOL_BIN, "group", "describe", group, "--format", "json",
                          "--brokers", broker.address], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


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


def test_members_keep_their_partitions_across_a_broker_restart(make_broker):
    """The group's state is in the metadata store: after kill -9 and a restart, members
    go on with their epochs and partitions (nothing revoked, nothing lost)."""
    broker = make_broker(*SETTINGS)
    create(broker, "restarted", partitions=4)
    members = [member(broker, "restarted", "restarted-group") for _ in range(2)]
    try:
        wait_until(lambda: balanced(members, {0, 1, 2, 3}), what="two members to share",
                   members=members)
        before = [m.assignment() for m in members]
        revocations = [len(revoked_events(m)) for m in members]
        broker.kill9()
        broker.start()
        records = [f"r{i}" for i in range(100)]
        produce(broker, "restarted", records, partitions=4)
        wait_until(lambda: set(records) <= set(consumed(members)),
                   what="records after the restart", members=members)
        time.sleep(2)  # several heartbeats (300 ms) against the restarted broker
        assert [m.assignment() for m in members] == before
        assert [len(revoked_events(m)) for m in members] == revocations, \
            "a member lost or gave up partitions across the restart"
    finally:
        for m in members:
            m.stop()


def group_resource(name, **configs):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    entries = [ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
               for key, value in configs.items()]
    return ConfigResource(ResourceType.GROUP, name, incremental_configs=entries)


def describe_group_configs(admin, name):
    from confluent_kafka.admin import ConfigResource, ResourceType
    resource = ConfigResource(ResourceType.GROUP, name)
    entries = admin.describe_configs([resource])[resource].result(timeout=10)
    # A group's configs are the consumer protocol's and share groups' (test_share_groups.py).
    return {key: (entry.value, int(entry.source)) for key, entry in entries.items()
            if key.startswith("consumer.")}


def kafka_python_describe_group(broker, name):
    """DescribeConfigs of a GROUP resource (type 32) from kafka-python's own encoder
    (its admin client knows no GROUP type)."""
    from kafka import KafkaAdminClient
    from kafka.protocol.admin import DescribeConfigsRequest_v1
    admin = KafkaAdminClient(bootstrap_servers=broker.address)
    try:
        node = admin._client.least_loaded_node()
        future = admin._send_request_to_node(
            node, DescribeConfigsRequest_v1(resources=[(32, name, None)], include_synonyms=False))
        admin._wait_for_futures([future])
        (error, _, _, _, entries), = future.value.resources
        assert error == 0
        return {entry[0]: (entry[1], entry[3]) for entry in entries
                if entry[0].startswith("consumer.")}
    finally:
        admin.close()


def kafka_python_alter_group(broker, name, configs, validate_only=False):
    """IncrementalAlterConfigs (key 44) of a GROUP resource from kafka-python's own
    encoder; the resource's error code."""
    from kafka import KafkaAdminClient
    from kafka.protocol.api import Request, Response
    from kafka.protocol.types import Array, Boolean, Int8, Int16, Int32, Schema, String

    class IncrementalAlterConfigsResponse_v0(Response):
        API_KEY = 44
        API_VERSION = 0
        SCHEMA = Schema(
            ("throttle_time_ms", Int32),
            ("responses", Array(("error_code", Int16), ("error_message", String("utf-8")),
                                ("resource_type", Int8), ("resource_name", String("utf-8")))))

    class IncrementalAlterConfigsRequest_v0(Request):
        API_KEY = 44
        API_VERSION = 0
        RESPONSE_TYPE = IncrementalAlterConfigsResponse_v0
        SCHEMA = Schema(
            ("resources", Array(
                ("resource_type", Int8), ("resource_name", String("utf-8")),
                ("configs", Array(("name", String("utf-8")), ("config_operation", Int8),
                                  ("value", String("utf-8")))))),
            ("validate_only", Boolean))

    SET = 0
    admin = KafkaAdminClient(bootstrap_servers=broker.address)
    try:
        node = admin._client.least_loaded_node()
        request = IncrementalAlterConfigsRequest_v0(
            resources=[(32, name, [(key, SET, value) for key, value in configs.items()])],
            validate_only=validate_only)
        future = admin._send_request_to_node(node, request)
        admin._wait_for_futures([future])
        (error, _, _, _), = future.value.responses
        return error
    finally:
        admin.close()


def test_group_configs_are_set_described_checked_and_kept(make_broker):
    """IncrementalAlterConfigs and DescribeConfigs on a GROUP resource (Kafka 4): a
    group's own session and heartbeat, within the broker's bounds, kept across a
    restart."""
    from confluent_kafka import KafkaException
    broker = make_broker(*SETTINGS)
    admin = AdminClient({"bootstrap.servers": broker.address})
    GROUP_CONFIG, DEFAULT_CONFIG = 8, 5

    assert describe_group_configs(admin, "tuned") == {
        "consumer.heartbeat.interval.ms": ("300", DEFAULT_CONFIG),
        "consumer.session.timeout.ms": ("4000", DEFAULT_CONFIG),
    }
    resource = group_resource("tuned", **{"consumer.session.timeout.ms": "3000",
                                          "consumer.heartbeat.interval.ms": "200"})
    admin.incremental_alter_configs([resource])[resource].result(timeout=10)
    expected = {
        "consumer.heartbeat.interval.ms": ("200", GROUP_CONFIG),
        "consumer.session.timeout.ms": ("3000", GROUP_CONFIG),
    }
    assert describe_group_configs(admin, "tuned") == expected
    assert kafka_python_describe_group(broker, "tuned") == expected

    for bad in ({"consumer.session.timeout.ms": "500"},  # below the broker's minimum
                {"consumer.heartbeat.interval.ms": "3000"},  # not below the session
                {"consumer.session.timeout.ms": "soon"},
                {"group.unknown.config": "1"}):
        refused = group_resource("tuned", **bad)
        with pytest.raises(KafkaException) as error:
            admin.incremental_alter_configs([refused])[refused].result(timeout=10)
        assert error.value.args[0].code() == confluent_kafka.KafkaError.INVALID_CONFIG, bad
    assert describe_group_configs(admin, "tuned") == expected

    # kafka-python's encoder: a check only, a refusal, then a change.
    INVALID_CONFIG = 40
    faster = {"consumer.heartbeat.interval.ms": "150"}
    assert kafka_python_alter_group(broker, "tuned", faster, validate_only=True) == 0
    assert kafka_python_describe_group(broker, "tuned") == expected
    assert kafka_python_alter_group(
        broker, "tuned", {"consumer.session.timeout.ms": "99999999"}) == INVALID_CONFIG
    assert kafka_python_alter_group(broker, "tuned", faster) == 0
    expected["consumer.heartbeat.interval.ms"] = ("150", GROUP_CONFIG)
    assert describe_group_configs(admin, "tuned") == expected

    broker.kill9()
    broker.start()
    admin = AdminClient({"bootstrap.servers": broker.address})
    assert describe_group_configs(admin, "tuned") == expected


def group_type(admin, group):
    described = admin.describe_consumer_groups([group])[group].result(timeout=10)
    return described.type


@pytest.mark.parametrize("classic_members", [
    (("confluent", "range"), ("kafka-python", "range")),
    (("confluent", "cooperative-sticky"), ("confluent", "cooperative-sticky")),
], ids=["eager", "cooperative"])
def test_a_classic_group_migrates_to_the_consumer_protocol_and_back(make_broker,
                                                                     classic_members):
    """Kafka 4's online migration: classic members (eager: confluent-kafka and
    kafka-python with range; cooperative: confluent-kafka) keep consuming when a
    consumer-protocol member joins their group, which becomes a consumer-protocol
    group with all three in it; when that member leaves, the group is classic again
    and its members share everything."""
    broker = make_broker(*SETTINGS)
    kind = classic_members[0][1]
    topic, group = f"migrating-{kind}", f"migrating-{kind}-group"
    create(broker, topic, partitions=4)
    everything = {0, 1, 2, 3}
    admin = AdminClient({"bootstrap.servers": broker.address})
    classic = [Member(broker, topic, group, client=client, assignor=assignor)
               for client, assignor in classic_members]
    upgraded = None
    try:
        wait_until(lambda: balanced(classic, everything), what="two classic members to share",
                   members=classic)
        assert group_type(admin, group) == ConsumerGroupType.CLASSIC
        first = [f"m{i}" for i in range(80)]
        produce(broker, topic, first, partitions=4)
        wait_until(lambda: set(first) <= set(consumed(classic)), what="records before",
                   members=classic)

        upgraded = member(broker, topic, group)
        everyone = classic + [upgraded]
        wait_until(lambda: balanced(everyone, everything), timeout=60,
                   what="classic and consumer-protocol members to share", members=everyone)
        assert group_type(admin, group) == ConsumerGroupType.CONSUMER
        described = admin.describe_consumer_groups([group])[group].result(timeout=10)
        assert len(described.members) == 3
        second = [f"n{i}" for i in range(80)]
        produce(broker, topic, second, partitions=4)
        wait_until(lambda: set(second) <= set(consumed(everyone)), what="records while mixed",
                   members=everyone)

        upgraded.stop()
        upgraded = None
        wait_until(lambda: balanced(classic, everything) and
                   group_type(admin, group) == ConsumerGroupType.CLASSIC, timeout=60,
                   what="the classic members to take everything back", members=classic)
        third = [f"o{i}" for i in range(80)]
        produce(broker, topic, third, partitions=4)
        wait_until(lambda: set(third) <= set(consumed(classic)), what="records after",
                   members=classic)
    finally:
        for m in classic + ([upgraded] if upgraded else []):
            m.stop()
