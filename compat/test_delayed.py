"""Delayed delivery with real clients: confluent-kafka and kafka-python produce
records with `spool.delay-ms` / `spool.deliver-at` on a topic with
`delivery.delay.enable`; their consumers see them at their due time and never before,
each once, also across a `kill -9` of the broker with records pending. The lateness
measured is written to target/delayed-lateness-<mode>.json."""

import json
import os
import statistics
import time
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer

from conftest import CLUSTER, METADATA, STORAGE

LATENESS = os.path.join("target", f"delayed-lateness-{METADATA}-{STORAGE}-{CLUSTER}.json")


def now_ms():
    return int(time.time() * 1000)


def delayed_topic(broker, partitions=1):
    topic = f"delayed-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.address})
    config = {"delivery.delay.enable": "true", "delivery.delay.max.ms": "600000"}
    admin.create_topics([NewTopic(topic, partitions, 1, config=config)])[topic].result(10)
    return topic


def consume_confluent(broker, topic, count, timeout=30):
    """(value, timestamp ms, receive ms, headers) of `count` records, in order."""
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": f"g-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got = []
    deadline = time.time() + timeout
    while len(got) < count and time.time() < deadline:
        message = consumer.poll(0.05)
        if message is None or message.error():
            continue
        got.append((message.value().decode(), message.timestamp()[1], now_ms(),
                    dict(message.headers() or [])))
    consumer.close()
    return got


def record_lateness(name, values):
    report = {}
    if os.path.exists(LATENESS):
        with open(LATENESS) as f:
            report = json.load(f)
    ordered = sorted(values)
    report[name] = {
        "records": len(ordered),
        "p50_ms": statistics.median(ordered),
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "max_ms": ordered[-1],
    }
    os.makedirs(os.path.dirname(LATENESS), exist_ok=True)
    with open(LATENESS, "w") as f:
        json.dump(report, f, indent=2)


def test_confluent_records_arrive_when_due_and_never_before(broker):
    topic = delayed_topic(broker)
    producer = Producer({"bootstrap.servers": broker.address})
    sent_at = now_ms()
    producer.produce(topic, value=b"now", partition=0)
    dues = {}
    for i in range(20):
        # Half by due time, half by delay: a delay counts from the broker's receipt, a
        # little after `sent_at` (more when the producer first had to find the leader).
        delay = 1000 + 50 * i
        dues[f"later-{i}"] = sent_at + delay
        header = ("spool.deliver-at", str(sent_at + delay)) if i % 2 else ("spool.delay-ms", str(delay))
        producer.produce(topic, value=f"later-{i}".encode(), partition=0,
                         headers=[(header[0], header[1].encode())])
    assert producer.flush(30) == 0
    got = consume_confluent(broker, topic, 21)
    assert [value for value, *_ in got][0] == "now"
    delayed = got[1:]
    assert sorted(value for value, *_ in delayed) == sorted(dues), "each once"
    lateness = []
    for value, timestamp, received, headers in delayed:
        assert received >= dues[value], f"{value} arrived {dues[value] - received} ms early"
        assert timestamp >= dues[value], "its timestamp is its delivery time"
        assert "spool.delayed-from" in headers and "spool.delayed-offset" in headers
        if "spool.deliver-at" in headers:
            # The broker's lateness: its delivery time (the record's timestamp) past
            # the due time. (When the consumer received it also counts its group's
            # join.)
            lateness.append(timestamp - dues[value])
    record_lateness("confluent-kafka", lateness)


def test_kafka_python_records_arrive_at_their_deliver_at_time(broker):
    topic = delayed_topic(broker)
    producer = KafkaProducer(bootstrap_servers=broker.address, acks="all")
    due = now_ms() + 1500
    for i in range(10):
        producer.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0,
                      headers=[("spool.deliver-at", str(due + i).encode()), ("trace", b"t")])
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=broker.address, auto_offset_reset="earliest",
                             consumer_timeout_ms=15000)
    got = []
    for message in consumer:
        got.append((message, now_ms()))
        if len(got) == 10:
            break
    consumer.close()
    assert [m.value for m, _ in got] == [f"v{i}".encode() for i in range(10)], "in due order"
    for message, received in got:
        headers = dict(message.headers)
        assert received >= due and message.timestamp >= due
        assert headers["trace"] == b"t"
        assert message.key.startswith(b"k")
    record_lateness("kafka-python", [message.timestamp - due for message, _ in got])


def test_a_bad_due_time_is_refused_with_invalid_record(broker):
    topic = delayed_topic(broker)
    producer = Producer({"bootstrap.servers": broker.address})
    errors = []
    producer.produce(topic, value=b"x", partition=0, headers=[("spool.delay-ms", b"soon")],
                     on_delivery=lambda error, _: errors.append(error))
    producer.flush(30)
    assert errors and errors[0] is not None
    assert errors[0].code() == KafkaError.INVALID_RECORD, errors[0]


def test_pending_records_survive_kill9_and_arrive_once(make_broker):
    broker = make_broker()
    topic = delayed_topic(broker, partitions=2)
    producer = Producer({"bootstrap.servers": broker.address, "acks": "all"})
    due = now_ms() + 2500
    for i in range(40):
        producer.produce(topic, value=f"held-{i}".encode(), partition=i % 2,
                         headers=[("spool.deliver-at", str(due).encode())])
    assert producer.flush(30) == 0
    broker.kill9()
    broker.start()
    got = consume_confluent(broker, topic, 40, timeout=60)
    values = [value for value, *_ in got]
    assert sorted(values) == sorted(f"held-{i}" for i in range(40)), "every one, once"
    assert all(received >= due for _, _, received, _ in got), "none early"
    # Nothing more arrives later.
    time.sleep(0.5)
    assert len(consume_confluent(broker, topic, 41, timeout=8)) == 40
