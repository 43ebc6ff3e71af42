"""The HTTP admin listener (health, metrics, REST) with real clients: /metrics
(parsed by the Prometheus client library's OpenMetrics parser) counts what
confluent-kafka and kafka-python produce and consume; the REST API shows their messages (keys, values, headers,
compressed batches), topics and a group's lag. In a cluster, each broker answers for
the partitions it leads and the groups it coordinates: the tests ask the right one,
and add up the brokers' counters."""

import json
import time
import urllib.error
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer
from prometheus_client.openmetrics.parser import text_string_to_metric_families


def get(url):
    """(status, JSON body) of a GET."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def send(method, url, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def samples(broker):
    """Every sample of every broker: {(name, sorted labels): summed value}."""
    total = {}
    for url in broker.admin_urls:
        with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
            assert response.headers["content-type"].startswith("application/openmetrics-text")
            text = response.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                total[key] = total.get(key, 0) + sample.value
    return total


def value(all_samples, name, **labels):
    return all_samples.get((name, tuple(sorted(labels.items()))), 0)


def leader_admin(broker, topic, partition=0):
    """The admin URL of the broker leading the partition."""
    _, detail = get(f"{broker.admin_url}/api/topics/{topic}")
    leader = detail["partitions"][partition]["leader"]
    return broker.admin_url_of(leader)


def group_admin(broker, group):
    """The admin URL of the broker coordinating the group."""
    deadline = time.time() + 20
    while time.time() < deadline:
        for url in broker.admin_urls:
            status, _ = get(f"{url}/api/groups/{group}")
            if status == 200:
                return url
        time.sleep(0.2)
    raise AssertionError(f"no broker coordinates {group}")


def create(broker, topic, partitions=1):
    status, body = send("POST", f"{broker.admin_url}/api/topics",
                        {"name": topic, "partitions": partitions})
    assert status == 201, body
    # Every broker of a cluster knows the topic and its leaders before clients use it.
    deadline = time.time() + 20
    for url in broker.admin_urls:
        while get(f"{url}/api/topics/{topic}")[1]["partitions"][0]["leader"] < 0:
            assert time.time() < deadline, "the topic got no leader"
            time.sleep(0.05)


def test_health_answers_for_every_broker(broker):
    for url in broker.admin_urls:
        assert get(url + "/health/live") == (200, {"status": "live"})
        status, body = get(url + "/health/ready")
        assert status == 200, body
        assert body["checks"]["metadata_store"] == "ok"


def test_metrics_count_what_real_clients_produce_and_consume(broker):
    topic = f"metered-{uuid.uuid4().hex[:8]}"
    create(broker, topic, partitions=2)
    before = samples(broker)
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 5})
    for i in range(40):
        producer.produce(topic, value=f"confluent-{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    legacy = KafkaProducer(bootstrap_servers=broker.address, compression_type="gzip", acks="all")
    for i in range(10):
        legacy.send(topic, value=f"kafka-python-{i}".encode(), partition=0)
    legacy.flush(30)
    legacy.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=broker.address, group_id=f"g-{topic}",
                             auto_offset_reset="earliest", consumer_timeout_ms=10000)
    read = 0
    for _ in consumer:
        read += 1
        if read == 50:
            break
    consumer.commit()
    consumer.close()
    assert read == 50

    after = samples(broker)
    delta = lambda name, **labels: value(after, name, **labels) - value(before, name, **labels)
    assert delta("spool_topic_records_in_total", topic=topic) == 50
    bytes_in = delta("spool_topic_bytes_in_total", topic=topic)
    assert bytes_in > 0
    assert delta("spool_topic_bytes_out_total", topic=topic) >= bytes_in
    produce_requests = sum(v for (name, labels), v in after.items()
                           if name == "spool_requests_total" and ("api", "Produce") in labels)
    assert produce_requests >= 2
    assert sum(v for (name, labels), v in after.items()
               if name == "spool_requests_total" and ("api", "Fetch") in labels) >= 1
    assert value(after, "spool_request_duration_seconds_count", api="Produce") >= produce_requests
    assert value(after, "spool_partition_high_watermark", topic=topic, partition="0") == 30
    assert value(after, "spool_partition_high_watermark", topic=topic, partition="1") == 20
    assert value(after, "spool_connections_accepted_total") > value(before, "spool_connections_accepted_total")


def test_messages_of_real_clients_are_browsed_with_keys_values_and_headers(broker):
    topic = f"browsed-{uuid.uuid4().hex[:8]}"
    create(broker, topic)
    producer = Producer({"bootstrap.servers": broker.address, "compression.type": "zstd"})
    producer.produce(topic, key=b"order-1", value=b'{"total": 12}', partition=0,
                     headers=[("trace", b"abc"), ("bin", b"\xff\x00")], timestamp=1_700_000_000_000)
    producer.produce(topic, key=None, value=None, partition=0, timestamp=1_700_000_001_000)
    assert producer.flush(30) == 0
    legacy = KafkaProducer(bootstrap_servers=broker.address, compression_type="gzip", acks="all")
    legacy.send(topic, key=b"k", value="héllo".encode(), partition=0,
                timestamp_ms=1_700_000_002_000).get(30)
    legacy.close()

    # Every broker of a cluster shows them: the leader from its partition, the others
    # from what is committed.
    pages = [get(f"{admin}/api/topics/{topic}/partitions/0/messages?offset=0&limit=10")
             for admin in broker.admin_urls]
    for status, page in pages:
        assert status == 200, page
        assert page == pages[0][1]
    admin = leader_admin(broker, topic)
    status, page = pages[0]
    first, tombstone, third = page["messages"]
    assert first["key"] == {"encoding": "utf8", "data": "order-1"}
    assert first["value"] == {"encoding": "utf8", "data": '{"total": 12}'}
    assert first["headers"] == [
        {"key": "trace", "value": {"encoding": "utf8", "data": "abc"}},
        {"key": "bin", "value": {"encoding": "base64", "data": "/wA="}},
    ]
    assert first["timestamp"] == 1_700_000_000_000
    assert tombstone["key"] is None and tombstone["value"] is None
    assert third["value"] == {"encoding": "utf8", "data": "héllo"}
    assert (page["next_offset"], page["high_watermark"]) == (3, 3)
    status, page = get(f"{admin}/api/topics/{topic}/partitions/0/messages?timestamp=1700000001500")
    assert [m["offset"] for m in page["messages"]] == [2]
    status, error = get(f"{admin}/api/topics/{topic}/partitions/0/messages?offset=99")
    assert (status, error["error"]) == (400, "OFFSET_OUT_OF_RANGE")


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_consumer_groups_lag_is_shown_where_it_is_coordinated(broker, protocol):
    """Either protocol's group (KIP-848's too): its type, state, members with their
    assignments, and lag, from the broker that coordinates it."""
    topic = f"lagged-{uuid.uuid4().hex[:8]}"
    group = f"g-{topic}"
    create(broker, topic)
    producer = Producer({"bootstrap.servers": broker.address})
    for i in range(10):
        producer.produce(topic, value=str(i).encode(), partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "group.protocol": protocol})
    consumer.subscribe([topic])
    taken = []
    deadline = time.time() + 30
    while len(taken) < 4 and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            taken.append(message)
    consumer.commit(message=taken[3], asynchronous=False)
    admin = group_admin(broker, group)
    status, detail = get(f"{admin}/api/groups/{group}")
    assert status == 200, detail
    assert (detail["group_type"], detail["state"]) == (protocol, "Stable")
    assert len(detail["members"]) == 1
    assert detail["members"][0]["assignment"] == {topic: [0]}
    status, listed = get(f"{admin}/api/groups")
    assert status == 200, listed
    (summary,) = [g for g in listed if g["group"] == group]
    assert (summary["group_type"], summary["members"]) == (protocol, 1)
    (offset,) = detail["offsets"]
    assert (offset["committed"], offset["high_watermark"], offset["lag"]) == (4, 10, 6)
    for other in broker.admin_urls:
        if other != admin:
            status, error = get(f"{other}/api/groups/{group}")
            assert (status, error["error"]) == (503, "NOT_COORDINATOR"), error
    consumer.close()
    all_samples = samples(broker)
    assert value(all_samples, "spool_group_committed_offset", group=group, topic=topic, partition="0") == 4


def test_topics_are_created_altered_and_deleted_over_rest(broker):
    topic = f"rest-{uuid.uuid4().hex[:8]}"
    create(broker, topic, partitions=3)
    status, configs = send("PATCH", f"{broker.admin_url}/api/topics/{topic}/configs",
                           {"retention.ms": "3600000"})
    assert status == 200, configs
    assert {"name": "retention.ms", "value": "3600000", "source": "topic"} in configs
    # A real client sees the change.
    from confluent_kafka.admin import AdminClient, ConfigResource
    admin = AdminClient({"bootstrap.servers": broker.address})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    described = admin.describe_configs([resource])[resource].result(10)
    assert described["retention.ms"].value == "3600000"
    status, error = send("POST", f"{broker.admin_url}/api/topics", {"name": topic})
    assert (status, error["error"]) == (409, "TOPIC_ALREADY_EXISTS")
    status, _ = send("DELETE", f"{broker.admin_url}/api/topics/{topic}")
    assert status == 204
    deadline = time.time() + 20
    while topic in admin.list_topics(timeout=10).topics:
        assert time.time() < deadline, "the topic is still listed"
        time.sleep(0.1)


def test_the_grafana_dashboard_asks_only_for_series_the_broker_exports(broker):
    import os
    import re

    from conftest import STORAGE
    path = os.path.join(os.path.dirname(__file__), "..", "docs", "grafana-dashboard.json")
    with open(path) as f:
        dashboard = json.load(f)
    asked = {name for panel in dashboard["panels"] for target in panel["targets"]
             for name in re.findall(r"spool_[a-z_]+", target["expr"])}
    # Labelled series exist once something happened: a produce, a fetch, a group's
    # commit and an error.
    topic = f"dashboard-{uuid.uuid4().hex[:8]}"
    create(broker, topic)
    producer = Producer({"bootstrap.servers": broker.address})
    producer.produce(topic, value=b"x", partition=0)
    assert producer.flush(30) == 0
    consumer = KafkaConsumer(topic, bootstrap_servers=broker.address, group_id=f"g-{topic}",
                             auto_offset_reset="earliest", consumer_timeout_ms=10000)
    assert next(iter(consumer)).value == b"x"
    consumer.commit()
    consumer.close()
    from confluent_kafka.admin import AdminClient
    # The client is kept until its answer is in: a client collected while its request
    # is in flight may never resolve the future.
    admin = AdminClient({"bootstrap.servers": broker.address})
    assert admin.delete_topics(["no-such-topic"])["no-such-topic"].exception(30) is not None
    group_admin(broker, f"g-{topic}")  # until its coordinator knows the group
    families = {}
    for url in broker.admin_urls:
        with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
            families.update({family.name: family.type
                             for family in text_string_to_metric_families(response.read().decode())})
    exported = set()
    for name, kind in families.items():
        exported |= {name, name + "_total"} if kind == "counter" else {name}
        if kind == "histogram":
            exported |= {name + "_bucket", name + "_count", name + "_sum"}
    # Object storage and the cluster exist in shared-storage mode only.
    if STORAGE != "s3":
        asked = {name for name in asked if not name.startswith(("spool_object_", "spool_catalogue_", "spool_cluster_"))}
    assert asked and asked <= exported, sorted(asked - exported)
