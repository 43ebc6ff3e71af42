"""Client quotas with real clients, on one broker or a cluster: kafka-python's own
encoder sets and describes quotas (AlterClientQuotas v0, written here with its
protocol types, and DescribeClientQuotas v0); a confluent-kafka (librdkafka) producer
over its `producer_byte_rate` and a kafka-python consumer over its
`consumer_byte_rate` are held to them, within 20%, and are told so (librdkafka's
throttle events, kafka-python's throttle-time metric). Quotas are per broker, as in Kafka: each producer here writes to a topic of
one partition, so to one broker."""

import time
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.protocol.admin import DescribeClientQuotasRequest_v0
from kafka.protocol.api import Request, Response
from kafka.protocol.types import Array, Boolean, Float64, Int16, Int32, Schema, String


class AlterClientQuotasResponse_v0(Response):
    API_KEY = 49
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("entries", Array(
            ("error_code", Int16),
            ("error_message", String("utf-8")),
            ("entity", Array(("entity_type", String("utf-8")),
                             ("entity_name", String("utf-8")))))),
    )


class AlterClientQuotasRequest_v0(Request):
    API_KEY = 49
    API_VERSION = 0
    RESPONSE_TYPE = AlterClientQuotasResponse_v0
    SCHEMA = Schema(
        ("entries", Array(
            ("entity", Array(("entity_type", String("utf-8")),
                             ("entity_name", String("utf-8")))),
            ("ops", Array(("key", String("utf-8")), ("value", Float64),
                          ("remove", Boolean))))),
        ("validate_only", Boolean),
    )


def call(admin, request):
    node = admin._client.least_loaded_node()
    future = admin._send_request_to_node(node, request)
    admin._wait_for_futures([future])
    return future.value


def set_rate(broker, client_id, rate, key="producer_byte_rate"):
    admin = KafkaAdminClient(bootstrap_servers=broker.address)
    try:
        response = call(admin, AlterClientQuotasRequest_v0(
            entries=[([("client-id", client_id)], [(key, float(rate), False)])],
            validate_only=False))
        assert [entry[0] for entry in response.entries] == [0]
        described = call(admin, DescribeClientQuotasRequest_v0(
            components=[("client-id", 0, client_id)], strict=True))
        assert described.error_code == 0
        assert [(list(e[0]), list(e[1])) for e in described.entries] == [
            ([("client-id", client_id)], [(key, float(rate))])]
    finally:
        admin.close()


def one_partition_topic(broker):
    topic = f"q-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.address})
    for future in admin.create_topics([NewTopic(topic, 1)]).values():
        future.result(20)
    return topic


def test_a_librdkafka_producer_is_held_to_its_byte_rate(broker):
    rate = 1_000_000
    set_rate(broker, "throttled-rd", rate)
    topic = one_partition_topic(broker)
    throttles = []
    producer = Producer({"bootstrap.servers": broker.address, "client.id": "throttled-rd",
                         "linger.ms": 5, "queue.buffering.max.kbytes": 4096,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    delivered = []
    value = b"x" * 1000
    started = time.time()
    while time.time() - started < 8:
        try:
            producer.produce(topic, value, on_delivery=lambda err, msg: delivered.append(
                (time.time(), len(msg.value()))) if err is None else None)
        except BufferError:
            producer.poll(0.01)
    producer.flush(60)
    # Past the first second's burst (and librdkafka's queue filling), the pace.
    steady = [(t, n) for t, n in delivered if t >= started + 3]
    elapsed = steady[-1][0] - steady[0][0]
    measured = sum(n for _, n in steady) / elapsed
    assert abs(measured - rate) < rate * 0.2, f"{measured:.0f} B/s for a quota of {rate}"
    assert throttles and max(throttles) > 0


def test_a_kafka_python_consumer_is_held_to_its_byte_rate(broker):
    """consumer_byte_rate, with kafka-python (whose producer is not used here: after a
    throttled answer with nothing else in flight, kafka-python 2.3's sender waits for
    an event that never comes, against Kafka as against Spool)."""
    rate = 500_000
    set_rate(broker, "throttled-kc", rate, key="consumer_byte_rate")
    topic = one_partition_topic(broker)
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 5})
    for _ in range(400):
        producer.produce(topic, b"z" * 10_000)
    producer.flush(30)
    consumer = KafkaConsumer(topic, bootstrap_servers=broker.address, client_id="throttled-kc",
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             max_partition_fetch_bytes=100_000, fetch_max_bytes=100_000)
    received = 0
    paced_from = None
    deadline = time.time() + 60
    while received < 4_000_000 and time.time() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            received += sum(len(r.value) for r in records)
            # Past the first second's worth (the burst), the pace.
            if paced_from is None and received >= rate:
                paced_from, paced_start = time.time(), received
    elapsed = time.time() - paced_from
    throttle_max = consumer.metrics()["consumer-metrics"].get("throttle-time-max", 0)
    consumer.close()
    assert received == 4_000_000
    measured = (received - paced_start) / elapsed
    assert abs(measured - rate) < rate * 0.2, f"{measured:.0f} B/s for a quota of {rate}"
    assert throttle_max > 0
