"""View topics with real clients: a view (`view.source.topic`, `view.filter` tags,
`view.filter.sql` over headers) is read like any topic by confluent-kafka
(librdkafka), kafka-python and kcat, which get exactly the source's matching records
at the source's offsets and move past the gaps, also where a whole fetch matches
nothing; groups commit and resume on views; ListOffsets by time is the source's;
producing to a view is refused; the lag on a view comes with an estimate of the
matching records."""

import json
import time
import urllib.error
import urllib.request
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaPartition

from conftest import CLUSTER, kcat


def create(broker, name, partitions=1, **configs):
    admin = AdminClient({"bootstrap.servers": broker.address})
    config = {key.replace("_", "."): value for key, value in configs.items()}
    admin.create_topics([NewTopic(name, partitions, 1, config=config)])[name].result(15)


def source_with_views(broker, partitions=1):
    """A source topic and two views of it: tags A or B, and region eu over 100."""
    source = f"orders-{uuid.uuid4().hex[:8]}"
    create(broker, source, partitions)
    create(broker, f"{source}-ab", -1, view_source_topic=source, view_filter="A || B")
    create(broker, f"{source}-big-eu", -1, view_source_topic=source,
           **{"view.filter.sql": "region = 'eu' AND amount > 100"})
    return source


def produce(broker, topic, records, partition=0, batch=True, compression="none"):
    """Sends (value, headers) records; `batch` lets them share batches."""
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 50 if batch else 0,
                         "compression.type": compression})
    for value, headers in records:
        producer.produce(topic, value=value.encode(), partition=partition,
                         headers=list(headers.items()))
        if not batch:
            producer.flush(10)
    assert producer.flush(30) == 0


def tagged(prefix, count, tag, **headers):
    return [(f"{prefix}{i}", {"spool.tag": tag, **headers}) for i in range(count)]


def confluent_read(broker, topic, count, group=None, timeout=30, settings=None):
    """(offset, value) of `count` records of `topic`, as a group member when `group`
    (committing as it goes) or assigned from the start."""
    config = {"bootstrap.servers": broker.address, "auto.offset.reset": "earliest",
              "group.id": group or f"g-{uuid.uuid4().hex}", "enable.auto.commit": False,
              "fetch.max.bytes": 4096, "message.max.bytes": 4096, "max.partition.fetch.bytes": 1024, **(settings or {})}
    consumer = Consumer(config)
    if group:
        consumer.subscribe([topic])
    else:
        consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.time() + timeout
    while len(got) < count and time.time() < deadline:
        message = consumer.poll(0.2)
        if message is None:
            continue
        assert not message.error() or message.error().code() == KafkaError._PARTITION_EOF, \
            message.error()
        if message.error():
            continue
        got.append((message.offset(), message.value().decode()))
        if group:
            consumer.commit(message, asynchronous=False)
    # Nothing more arrives.
    extra = consumer.poll(1.0)
    assert extra is None or extra.error(), f"more than asked: {extra.value()}"
    consumer.close()
    return got


def test_librdkafka_reads_exactly_the_matching_records_past_gaps(broker):
    source = source_with_views(broker)
    # Batches of every kind: all matching, none, mixed (compressed, ending on a
    # non-match), untagged; and long runs where a whole fetch matches nothing.
    records = (tagged("a", 5, "A", region="eu", amount="150")
               + tagged("c", 300, "C", region="eu", amount="500")
               + [("b0", {"spool.tag": "B"}), ("c-x", {"spool.tag": "C"}),
                  ("a5", {"spool.tag": "A", "region": "us", "amount": "900"}),
                  ("c-y", {"spool.tag": "C", "region": "eu", "amount": "101"})]
               + [("untagged", {})] * 20
               + tagged("b", 3, "B", region="eu", amount="100"))
    produce(broker, source, records, compression="zstd")
    expected_ab = [(o, v) for o, (v, h) in enumerate(records) if h.get("spool.tag") in ("A", "B")]
    expected_eu = [(o, v) for o, (v, h) in enumerate(records)
                   if h.get("region") == "eu" and float(h.get("amount", "0")) > 100]
    assert confluent_read(broker, f"{source}-ab", len(expected_ab)) == expected_ab
    assert confluent_read(broker, f"{source}-big-eu", len(expected_eu)) == expected_eu


def test_a_group_commits_and_resumes_on_a_view(broker):
    source = source_with_views(broker)
    produce(broker, source, tagged("a", 3, "A") + tagged("c", 50, "C"))
    group = f"view-group-{uuid.uuid4().hex[:6]}"
    first = confluent_read(broker, f"{source}-ab", 3, group=group)
    assert [v for _, v in first] == ["a0", "a1", "a2"]
    produce(broker, source, tagged("c", 50, "C") + tagged("b", 2, "B"))
    again = confluent_read(broker, f"{source}-ab", 2, group=group)
    assert again == [(103, "b0"), (104, "b1")], "resumed after the committed offset"

    # The committed offset and the lag: in the source's offsets, with an estimate of
    # the records the view will show.
    produce(broker, source, tagged("c", 90, "C") + tagged("a", 10, "A"))
    described = None
    for url in broker.admin_urls:  # the group's coordinator answers
        try:
            with urllib.request.urlopen(f"{url}/api/groups/{group}") as answer:
                described = json.load(answer)
        except urllib.error.HTTPError:
            continue
    offsets = described["offsets"]
    assert [(o["topic"], o["committed"]) for o in offsets] == [(f"{source}-ab", 105)]
    assert offsets[0]["lag"] == 100
    # The estimate comes from the view reads the coordinator served: on one broker,
    # all of them; on a cluster, perhaps none (then it is the whole lag).
    assert 0 <= offsets[0]["matching_lag"] <= 100, offsets[0]
    if CLUSTER == 1:
        assert offsets[0]["matching_lag"] < 50, offsets[0]


def test_kafka_python_and_kcat_read_a_view(broker):
    source = source_with_views(broker)
    records = []
    for round in range(20):
        records += tagged(f"c{round}-", 30, "C") + [(f"a{round}", {"spool.tag": "A"})]
    produce(broker, source, records)
    expected = [(o, v) for o, (v, h) in enumerate(records) if h["spool.tag"] == "A"]

    consumer = KafkaConsumer(bootstrap_servers=broker.address, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=3000,
                             max_partition_fetch_bytes=512)
    partition = KafkaPartition(f"{source}-ab", 0)
    consumer.assign([partition])
    consumer.seek(partition, 0)
    got = [(m.offset, m.value.decode()) for m in consumer]
    assert got == expected
    # From an offset inside a gap: the next match.
    consumer.seek(partition, 5)
    assert next(iter(consumer)).value == b"a0"
    consumer.close()

    out = kcat("-b", broker.address, "-C", "-t", f"{source}-ab", "-p", "0", "-o", "beginning",
               "-e", "-f", "%o %s\\n")
    assert [tuple(line.split(" ")) for line in out.decode().splitlines()] == \
        [(str(o), v) for o, v in expected]


def test_offsets_by_time_are_the_sources_and_writes_are_refused(broker):
    source = source_with_views(broker)
    produce(broker, source, tagged("c", 10, "C"))
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    time.sleep(0.05)
    produce(broker, source, tagged("a", 5, "A"))
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "times"})
    [view] = consumer.offsets_for_times([TopicPartition(f"{source}-ab", 0, middle)], timeout=10)
    [src] = consumer.offsets_for_times([TopicPartition(source, 0, middle)], timeout=10)
    assert view.offset == src.offset == 10
    low, high = consumer.get_watermark_offsets(TopicPartition(f"{source}-ab", 0), timeout=10)
    assert (low, high) == (0, 15)
    consumer.close()

    producer = Producer({"bootstrap.servers": broker.address, "message.timeout.ms": 10000})
    errors = []
    producer.produce(f"{source}-ab", value=b"x", partition=0,
                     on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(15)
    assert errors and errors[0] is not None, "a write to a view is refused"
    assert errors[0].code() == KafkaError.TOPIC_EXCEPTION, errors[0]


def test_deleting_the_source_deletes_its_views(broker):
    source = source_with_views(broker)
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.delete_topics([source])[source].result(15)
    deadline = time.time() + 10
    while time.time() < deadline:
        topics = admin.list_topics(timeout=10).topics
        if not any(name.startswith(source) for name in topics):
            break
        time.sleep(0.2)
    assert not any(name.startswith(source) for name in admin.list_topics(timeout=10).topics)
    # A view of a topic that does not exist is refused.
    try:
        create(broker, f"{source}-again", -1, view_source_topic=source)
        raise AssertionError("a view of a missing topic was created")
    except KafkaException as error:
        assert error.args[0].code() == KafkaError.INVALID_CONFIG, error
