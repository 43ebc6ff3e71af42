"""Idempotent producers in trouble, with librdkafka (confluent-kafka) and kafka-python:
responses dropped and connections cut mid-request by a proxy, and the broker killed
with SIGKILL and restarted while they produce. Afterwards every partition must hold
every message exactly once, in send order."""

import threading
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer

from chaos_proxy import ChaosProxy
from conftest import BROKERS, CLUSTER, kcat

PARTITIONS = 2


def create_topic(address, name):
    admin = AdminClient({"bootstrap.servers": address})
    for future in admin.create_topics([NewTopic(name, PARTITIONS, 1)]).values():
        future.result(15)


def assert_exactly_once_in_order(address, topic, count):
    out = kcat("-b", address, "-C", "-t", topic, "-o", "beginning", "-e",
               "-f", "%p %s\n", timeout=60).decode().split("\n")
    rows = [line.split(" ") for line in out if line]
    for partition in range(PARTITIONS):
        values = [int(v) for p, v in rows if p == str(partition)]
        expected = [i for i in range(count) if i % PARTITIONS == partition]
        if values != expected:
            seen = set()
            duplicates = sorted({v for v in values if v in seen or seen.add(v)})
            missing = sorted(set(expected) - set(values))
            pytest.fail(f"partition {partition}: {len(values)} values for {len(expected)}; "
                        f"duplicates {duplicates[:10]}, missing {missing[:10]}, "
                        f"in order: {values == sorted(values)}")


def refused_batches(broker):
    with open(broker.log.name, "rb") as log:
        return log.read().count(b"refusing an idempotent batch")


class ConfluentClient:
    """librdkafka with idempotence on: small batches, so that many Produce requests
    are in flight when the proxy or a kill strikes."""

    def __init__(self, address):
        self.errors = []
        self.delivered_count = 0
        self.producer = Producer({
            "bootstrap.servers": address,
            "enable.idempotence": True,
            "linger.ms": 2,
            "batch.num.messages": 20,
            "request.timeout.ms": 5000,
            "message.timeout.ms": 120000,
            "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 200,
            "retry.backoff.ms": 20,
            "error_cb": self._error,
        })

    def _error(self, error):
        if error.fatal():
            self.errors.append(f"fatal: {error}")

    def _delivered(self, error, _message):
        if error is not None:
            self.errors.append(str(error))
        else:
            self.delivered_count += 1

    @property
    def delivered(self):
        # Delivery reports arrive only through poll: serve them here too, or a sender
        # that finished before the first acknowledgement would leave the count at 0.
        self.producer.poll(0)
        return self.delivered_count

    def send(self, topic, i):
        self.producer.produce(topic, value=str(i).encode(), partition=i % PARTITIONS,
                              on_delivery=self._delivered)
        self.producer.poll(0)

    def finish(self):
        assert self.producer.flush(120) == 0, "messages left undelivered"


class KafkaPythonClient:
    """kafka-python with idempotence on (acks=all; it allows one request in flight)."""

    def __init__(self, address):
        self.errors = []
        self.futures = []
        self.producer = KafkaProducer(
            bootstrap_servers=address, enable_idempotence=True, acks="all",
            linger_ms=2, batch_size=256, request_timeout_ms=5000,
            delivery_timeout_ms=120000, retry_backoff_ms=20, reconnect_backoff_ms=20,
            reconnect_backoff_max_ms=200, max_in_flight_requests_per_connection=1)

    @property
    def delivered(self):
        return sum(1 for f in self.futures if f.succeeded())

    def send(self, topic, i):
        self.futures.append(
            self.producer.send(topic, value=str(i).encode(), partition=i % PARTITIONS))

    def finish(self):
        self.producer.flush(120)
        for future in self.futures:
            try:
                future.get(0)
            except Exception as error:  # noqa: BLE001 - collected for the assertion
                self.errors.append(repr(error))
        self.producer.close(10)


CLIENTS = {"librdkafka": ConfluentClient, "kafka-python": KafkaPythonClient}


@pytest.mark.parametrize("client", CLIENTS)
def test_retries_through_dropped_responses_and_cut_connections(make_broker, client):
    # A proxy in front of each broker, which advertises it.
    proxies = [ChaosProxy(upstream_port=None) for _ in range(BROKERS)]
    broker = make_broker(node_args=lambda node: ["--advertise", proxies[node - 1].address])
    for proxy, port in zip(proxies, broker.ports):
        proxy.upstream_port = port
        proxy.start()
    entry = proxies[0].address

    def misbehave(enabled):
        for proxy in proxies:
            proxy.enabled = enabled

    def count(what):
        return sum(proxy.counts[what] for proxy in proxies)

    try:
        misbehave(False)
        create_topic(entry, "chaos")
        producer = CLIENTS[client](entry)
        misbehave(True)
        sent = 3000
        for i in range(sent):
            producer.send("chaos", i)
            if i % 100 == 0:
                time.sleep(0.01)
        producer.finish()
        assert producer.errors == []
        assert count("drop") >= 10, [proxy.counts for proxy in proxies]
        assert count("cut") >= 5, [proxy.counts for proxy in proxies]
        # The brokers advertise the proxies: read through them, behaving now.
        misbehave(False)
        assert_exactly_once_in_order(entry, "chaos", sent)
    finally:
        for proxy in proxies:
            proxy.stop()


@pytest.mark.parametrize("client", CLIENTS)
def test_kill9_of_the_broker_during_idempotent_production(make_broker, client):
    broker = make_broker()
    create_topic(broker.address, "survivor")
    producer = CLIENTS[client](broker.address)
    count = 4000
    sent = threading.Event()

    def produce():
        for i in range(count):
            producer.send("survivor", i)
            if i % 50 == 0:
                time.sleep(0.005)
        sent.set()

    thread = threading.Thread(target=produce)
    thread.start()
    deadline = time.time() + 30
    while producer.delivered < count // 4 and time.time() < deadline:
        time.sleep(0.01)
    assert producer.delivered >= count // 4, "production did not get going"
    broker.kill9()
    time.sleep(0.5)
    broker.start()
    thread.join(60)
    assert sent.is_set()
    producer.finish()
    assert producer.errors == []
    assert_exactly_once_in_order(broker.address, "survivor", count)
    # A producer the restarted broker did not remember would be refused on every
    # partition and every batch in flight; a few refusals of later batches after a
    # refused earlier one are the most a healthy run shows.
    assert refused_batches(broker) <= 2 * PARTITIONS * 5
