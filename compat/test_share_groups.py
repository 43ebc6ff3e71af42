"""Share groups (KIP-932) with confluent-kafka's ShareConsumer (librdkafka 2.15+):
several consumers read one partition and each record goes to one of them; a released
record comes back with a higher delivery count; a rejected one, or one delivered as
often as the limit allows, is not delivered again; a consumer that stops holding
records loses them when its lock runs out, one that dies or closes at once;
acknowledgements survive kill -9 of the broker; the group's settings are GROUP
configs set through the AdminClient."""

import multiprocessing
import time

import confluent_kafka
import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic, ResourceType)

from conftest import CLUSTER
from test_admin_http import samples, value
from test_groups import wait_until

# Locks as short as tests want them (Kafka's floor is 15 s).
SETTINGS = ("group.share.min.record.lock.duration.ms=1000",)


def create(broker, topic, partitions=1):
    admin = AdminClient({"bootstrap.servers": broker.address, **broker.client})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=10)


def produce(broker, topic, count, prefix="r"):
    producer = Producer({"bootstrap.servers": broker.address, "acks": "all", "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=f"{prefix}{i}".encode(), partition=0)
    assert producer.flush(10) == 0


def configure(broker, group, **configs):
    """Sets a share group's GROUP configs (their names with dots as underscores)."""
    admin = AdminClient({"bootstrap.servers": broker.address})
    entries = [ConfigEntry(name.replace("_", "."), str(value),
                           incremental_operation=AlterConfigOpType.SET)
               for name, value in configs.items()]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=10)


def consumer(broker, group, topic, explicit=False, **extra):
    config = {"bootstrap.servers": broker.address, "group.id": group, **extra}
    if explicit:
        config["share.acknowledgement.mode"] = "explicit"
    c = ShareConsumer(config)
    c.subscribe([topic])
    return c


def records(messages):
    out = []
    for m in messages:
        assert m.error() is None, m.error()
        out.append(m)
    return out


def poll_until(c, want, timeout=30, handle=None):
    """Polls `c` until `want` records came (each passed to `handle`), or the timeout."""
    got = []
    deadline = time.time() + timeout
    while len(got) < want and time.time() < deadline:
        for m in records(c.poll(0.5)):
            got.append(m)
            if handle:
                handle(m)
    return got


def test_the_client_has_share_consumers():
    version = tuple(int(n) for n in confluent_kafka.libversion()[0].split(".")[:2])
    assert version >= (2, 15), confluent_kafka.libversion()


def test_consumers_on_one_partition_share_its_records_once_each(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "queue")
    configure(broker, "workers", share_auto_offset_reset="earliest")
    produce(broker, "queue", 300)
    a = consumer(broker, "workers", "queue", **{"max.poll.records": 20})
    b = consumer(broker, "workers", "queue", **{"max.poll.records": 20})
    seen = {"a": [], "b": []}
    try:
        deadline = time.time() + 60
        while len(seen["a"]) + len(seen["b"]) < 300 and time.time() < deadline:
            for name, c in (("a", a), ("b", b)):
                seen[name] += [(m.offset(), m.delivery_count()) for m in records(c.poll(0.2))]
        # Implicit mode: the last poll's records are accepted by the next poll.
        a.poll(0.5)
        b.poll(0.5)
    finally:
        a.close()
        b.close()
    offsets = [o for name in seen for o, _ in seen[name]]
    assert sorted(offsets) == list(range(300)), "each record to exactly one consumer"
    assert seen["a"] and seen["b"], f"both consumers got records: {len(seen['a'])}, {len(seen['b'])}"
    assert {count for name in seen for _, count in seen[name]} == {1}

    # Everything was accepted: a new member of the group gets nothing old.
    late = consumer(broker, "workers", "queue")
    try:
        produce(broker, "queue", 1, prefix="new")
        got = poll_until(late, 1)
        assert [m.value() for m in got] == [b"new0"]
    finally:
        late.close()


def test_a_released_record_comes_back_with_a_higher_delivery_count(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "retry")
    configure(broker, "retriers", share_auto_offset_reset="earliest")
    produce(broker, "retry", 5)
    c = consumer(broker, "retriers", "retry", explicit=True)
    deliveries = []

    def handle(m):
        deliveries.append((m.offset(), m.delivery_count()))
        released = m.offset() == 2 and m.delivery_count() == 1
        c.acknowledge(m, AcknowledgeType.RELEASE if released else AcknowledgeType.ACCEPT)

    try:
        poll_until(c, 6, handle=handle)
        result = c.commit_sync()
        assert all(error is None for error in result.values()), result
    finally:
        c.close()
    assert sorted(deliveries) == [(0, 1), (1, 1), (2, 1), (2, 2), (3, 1), (4, 1)]


def read_all(broker, topic, count, timeout=20):
    """The first `count` records of `topic`, read by a plain consumer."""
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": broker.address, "group.id": f"reader-{topic}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got = []
    deadline = time.time() + timeout
    try:
        while len(got) < count and time.time() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m)
    finally:
        c.close()
    return got


@pytest.mark.parametrize("copy", [False, True])
def test_rejected_records_and_those_past_the_limit_become_dead_letters(make_broker, copy):
    broker = make_broker(*SETTINGS)
    create(broker, "poison")
    configure(broker, "strict", share_auto_offset_reset="earliest", share_delivery_count_limit=2,
              errors_deadletterqueue_topic_name="dlq.poison",
              errors_deadletterqueue_auto_create_topics_enable="true",
              errors_deadletterqueue_copy_record_enable=str(copy).lower())
    produce(broker, "poison", 3)
    c = consumer(broker, "strict", "poison", explicit=True)
    deliveries = []

    def handle(m):
        deliveries.append((m.offset(), m.delivery_count()))
        kind = {0: AcknowledgeType.REJECT, 1: AcknowledgeType.RELEASE}.get(m.offset(),
                                                                          AcknowledgeType.ACCEPT)
        c.acknowledge(m, kind)

    try:
        poll_until(c, 4, handle=handle)
        # Nothing more comes: 0 was rejected, 1 reached its limit of two deliveries.
        extra = poll_until(c, 1, timeout=3, handle=handle)
        assert extra == []
    finally:
        c.close()
    assert sorted(deliveries) == [(0, 1), (1, 1), (1, 2), (2, 1)]

    letters = read_all(broker, "dlq.poison", 2)
    assert len(letters) == 2, "one dead letter each for 0 and 1"
    by_offset = {}
    for letter in letters:
        headers = {k: v.decode() for k, v in letter.headers() if k.startswith("__dlq.")}
        by_offset[int(headers["__dlq.errors.offset"])] = (headers, letter.value())
    assert sorted(by_offset) == [0, 1]
    rejected, limited = by_offset[0][0], by_offset[1][0]
    assert rejected["__dlq.errors.topic"] == "poison"
    assert rejected["__dlq.errors.partition"] == "0"
    assert rejected["__dlq.errors.group"] == "strict"
    assert rejected["__dlq.errors.delivery.count"] == "1"
    assert "rejected" in rejected["__dlq.errors.message"]
    assert limited["__dlq.errors.delivery.count"] == "2"
    assert "limit" in limited["__dlq.errors.message"]
    counted = samples(broker)
    archived = value(counted, "spool_share_dead_letters_total")
    written = value(counted, "spool_share_dead_letters_written_total")
    assert archived >= 2 and written == archived, (archived, written)
    values = [by_offset[offset][1] for offset in (0, 1)]
    assert values == ([b"r0", b"r1"] if copy else [None, None])


def test_dead_letters_reach_a_dead_letter_partition_another_broker_leads(make_broker):
    """A one-partition dead-letter topic the user made: in a cluster most
    share-partitions are led by another broker than its partition, and their letters
    travel to it through the metadata store's queue. Every letter arrives once."""
    broker = make_broker(*SETTINGS)
    create(broker, "spread", partitions=3)
    create(broker, "dlq.lone")
    configure(broker, "rejecting", share_auto_offset_reset="earliest",
              errors_deadletterqueue_topic_name="dlq.lone")
    producer = Producer({"bootstrap.servers": broker.address, "acks": "all"})
    for partition in range(3):
        for i in range(4):
            producer.produce("spread", value=f"p{partition}-{i}".encode(), partition=partition)
    assert producer.flush(10) == 0
    c = consumer(broker, "rejecting", "spread", explicit=True)
    try:
        got = poll_until(c, 12, handle=lambda m: c.acknowledge(m, AcknowledgeType.REJECT))
        assert len(got) == 12
    finally:
        c.close()

    def source_of(letter):
        headers = dict(letter.headers())
        return int(headers["__dlq.errors.partition"]), int(headers["__dlq.errors.offset"])

    # One more than due: a letter written twice would show.
    sources = sorted(source_of(letter) for letter in read_all(broker, "dlq.lone", 13, timeout=5))
    assert sources == [(p, o) for p in range(3) for o in range(4)], sources
    counted = samples(broker)
    written = value(counted, "spool_share_dead_letters_written_total")
    assert value(counted, "spool_share_dead_letters_total") == written == 12
    queued = value(counted, "spool_share_dead_letters_queued_total")
    if CLUSTER > 1:
        assert queued > 0, "no letter went through the queue"
    else:
        assert queued == 0


def test_records_held_past_their_lock_go_to_another_consumer(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "locks")
    configure(broker, "lockers", share_auto_offset_reset="earliest",
              share_record_lock_duration_ms=2000)
    produce(broker, "locks", 3)
    slow = consumer(broker, "lockers", "locks", explicit=True)
    fast = consumer(broker, "lockers", "locks")
    try:
        held = poll_until(slow, 3)
        assert sorted(m.offset() for m in held) == [0, 1, 2]
        started = time.time()
        taken = poll_until(fast, 3, timeout=20)
        waited = time.time() - started
        assert sorted((m.offset(), m.delivery_count()) for m in taken) == [(0, 2), (1, 2), (2, 2)]
        assert waited >= 1.0, f"redelivered after {waited:.1f} s, before the 2 s lock ran out"
        fast.poll(0.5)  # accepts them
        # The slow consumer's locks are gone: its acknowledgements fail.
        for m in held:
            slow.acknowledge(m, AcknowledgeType.ACCEPT)
        result = slow.commit_sync()
        assert result and all(error is not None for error in result.values()), result
    finally:
        slow.close()
        fast.close()


def hold_and_hang(address, group, topic, held):
    """A share consumer that takes records, says which, and never acknowledges them."""
    c = ShareConsumer({"bootstrap.servers": address, "group.id": group,
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    got = poll_until(c, 3)
    held.put(sorted(m.offset() for m in got))
    time.sleep(3600)


def test_records_of_a_consumer_that_dies_or_closes_go_to_the_others_at_once(make_broker):
    """A consumer killed with SIGKILL leaves its records to the others when its
    connection closes, and one that closes when it says so, long before the 30 s
    lock would run out."""
    broker = make_broker(*SETTINGS)
    create(broker, "dying")
    configure(broker, "mortals", share_auto_offset_reset="earliest",
              share_record_lock_duration_ms=30000)
    produce(broker, "dying", 3)
    context = multiprocessing.get_context("spawn")
    held = context.Queue()
    dying = context.Process(target=hold_and_hang,
                            args=(broker.address, "mortals", "dying", held))
    dying.start()
    try:
        assert held.get(timeout=30) == [0, 1, 2]
    finally:
        dying.kill()
        dying.join(10)
    heir = consumer(broker, "mortals", "dying", explicit=True)
    try:
        started = time.time()
        taken = poll_until(heir, 3, timeout=20)
        assert sorted((m.offset(), m.delivery_count()) for m in taken) == [(0, 2), (1, 2), (2, 2)]
        assert time.time() - started < 15, "the records waited for their locks"
    finally:
        heir.close()
    second = consumer(broker, "mortals", "dying")
    try:
        started = time.time()
        again = poll_until(second, 3, timeout=20)
        assert sorted((m.offset(), m.delivery_count()) for m in again) == [(0, 3), (1, 3), (2, 3)]
        assert time.time() - started < 15, "the records waited for their locks"
        second.poll(0.5)  # accepts them
    finally:
        second.close()


def test_acknowledgements_survive_kill9_of_the_broker(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "durable")
    configure(broker, "keepers", share_auto_offset_reset="earliest")
    produce(broker, "durable", 10)
    c = consumer(broker, "keepers", "durable", explicit=True, **{"max.poll.records": 4})
    accepted = []
    try:
        for m in poll_until(c, 4):
            c.acknowledge(m, AcknowledgeType.ACCEPT)
            accepted.append(m.offset())
        result = c.commit_sync()
        assert all(error is None for error in result.values()), result
    finally:
        broker.kill9()
        c.close()
    broker.start()
    after = consumer(broker, "keepers", "durable")
    try:
        rest = poll_until(after, 10 - len(accepted), timeout=40)
        after.poll(0.5)
    finally:
        after.close()
    assert sorted(m.offset() for m in rest) == sorted(set(range(10)) - set(accepted))


def test_share_group_configs_are_checked_and_described(make_broker):
    broker = make_broker(*SETTINGS)
    with pytest.raises(confluent_kafka.KafkaException):
        configure(broker, "checked", share_delivery_count_limit=1)
    with pytest.raises(confluent_kafka.KafkaException):
        configure(broker, "checked", errors_deadletterqueue_topic_name="not-prefixed")
    configure(broker, "checked", share_record_lock_duration_ms=5000)
    admin = AdminClient({"bootstrap.servers": broker.address})
    resource = ConfigResource(ResourceType.GROUP, "checked")
    described = admin.describe_configs([resource])[resource].result(timeout=10)
    assert described["share.record.lock.duration.ms"].value == "5000"
    assert described["share.delivery.count.limit"].value == "5"
    assert described["share.auto.offset.reset"].value == "latest"


def test_a_released_record_waits_out_the_groups_backoff(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, "backoff")
    configure(broker, "patient", share_auto_offset_reset="earliest",
              spool_share_release_backoff_ms="1500,3000")
    produce(broker, "backoff", 1)
    c = consumer(broker, "patient", "backoff", explicit=True)
    deliveries = []

    def handle(m):
        deliveries.append((m.delivery_count(), time.time()))
        c.acknowledge(m, AcknowledgeType.RELEASE if m.delivery_count() < 3
                      else AcknowledgeType.ACCEPT)
        c.commit_sync()

    try:
        poll_until(c, 3, timeout=30, handle=handle)
    finally:
        c.close()
    assert [count for count, _ in deliveries] == [1, 2, 3]
    (_, first), (_, second), (_, third) = deliveries
    assert second - first >= 1.4, f"redelivered after {second - first:.2f} s, before 1.5 s"
    assert third - second >= 2.9, f"redelivered after {third - second:.2f} s, before 3 s"


def spool(broker, *args):
    import json
    import subprocess
    from conftest import SPOOL_BIN
    run = subprocess.run([SPOOL_BIN, *args, "--format", "json", "--brokers", broker.address],
                         capture_output=True, text=True, timeout=60)
    return run.returncode, (json.loads(run.stdout) if run.returncode == 0 else run.stderr)


def coordinator_admin_url(broker, group):
    """The admin listener of the broker coordinating `group` (the one whose REST API
    answers for it)."""
    import urllib.error
    import urllib.request
    for url in broker.admin_urls:
        try:
            with urllib.request.urlopen(f"{url}/api/groups/{group}", timeout=5):
                return url
        except urllib.error.URLError:
            continue
    raise AssertionError(f"no broker answers for group {group}")


def test_a_share_group_is_described_listed_and_deleted(make_broker):
    import json
    import urllib.request
    broker = make_broker(*SETTINGS)
    create(broker, "shown")
    configure(broker, "shown-group", share_auto_offset_reset="earliest")
    produce(broker, "shown", 10)
    c = consumer(broker, "shown-group", "shown", explicit=True, **{"client.id": "worker-1"})
    try:
        held = poll_until(c, 10)
        for m in held[:3]:
            c.acknowledge(m, AcknowledgeType.ACCEPT)
        for m in held[3:4]:
            c.acknowledge(m, AcknowledgeType.REJECT)
        # Acknowledging only some of a poll's records: the rest stay acquired.
        assert all(e is None for e in c.commit_sync().values())

        code, view = spool(broker, "group", "describe", "shown-group",
                           "--admin-url", coordinator_admin_url(broker, "shown-group"))
        assert code == 0, view
        assert view["group_type"] == "share" and view["state"] == "Stable"
        [member] = view["members"]
        assert member["client_id"] == "worker-1"
        assert member["assignment"] == {"shown": [0]}
        [partition] = view["partitions"]
        assert partition["start_offset"] == 4
        in_flight = partition["in_flight"]
        assert (in_flight["archived"], in_flight["lag"]) == (0, 6)
        # The coordinator sees a share-partition another broker leads as last stored,
        # where acquired records count as available.
        assert in_flight["acquired"] + in_flight["available"] == 6
        if len(broker.ports) == 1:
            assert in_flight["acquired"] == 6

        with urllib.request.urlopen(coordinator_admin_url(broker, "shown-group")
                                    + "/api/groups") as reply:
            listed = {g["group"]: g for g in json.load(reply)}
        assert listed["shown-group"]["group_type"] == "share"
        assert listed["shown-group"]["members"] == 1

        code, refused = spool(broker, "group", "delete", "shown-group")
        assert code != 0, "a share group with members is not deleted"
    finally:
        c.close()
    wait_until(lambda: spool(broker, "group", "describe", "shown-group")[1]["state"] == "Empty",
               what="the group to be empty")
    code, deleted = spool(broker, "group", "delete", "shown-group")
    assert code == 0, deleted
    code, gone = spool(broker, "group", "describe", "shown-group")
    assert code != 0
