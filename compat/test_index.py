"""Message indexes (docs/index.md): records found by key, header and JSON field through
the REST API and `spool find`, checked against a full read_committed scan by a real
client (kafka-python), with records produced by confluent-kafka (librdkafka, plain
and transactional) and kafka-python. The answers stay exact after kill -9,
DeleteRecords and compaction, and for fields indexed after the records came; a
deleted topic's index goes with it."""

import json
import os
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KPTopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from conftest import CLUSTER, SPOOL_BIN, STORAGE, topic_dir
from test_console import browser_page, shot  # noqa: F401

# Embedded mode: the chunks are files in the data directory.
LOCAL = STORAGE != "s3"
# Small chunks, so that a few hundred records make several.
SETTINGS = ("index.chunk.bytes=1024",)
FIELDS = "key,header:trace,value:$.user.id"


def create(broker, topic, partitions=3, **configs):
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])[topic].result(15)


def find(broker, topic, url=None, **params):
    """The REST API's answer to a search (raises HTTPError on a refusal)."""
    query = urllib.parse.urlencode({"limit": 1000, **params})
    address = f"{url or broker.admin_url}/api/topics/{topic}/messages?{query}"
    with urllib.request.urlopen(address, timeout=30) as answer:
        return json.load(answer)


def found(answer):
    return sorted((m["partition"], m["offset"]) for m in answer["messages"])


def scan(broker, topic):
    """Every committed record, read by kafka-python (read_committed)."""
    consumer = KafkaConsumer(bootstrap_servers=broker.address, enable_auto_commit=False,
                             isolation_level="read_committed", consumer_timeout_ms=5000)
    partitions = [KPTopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    ends = consumer.end_offsets(partitions)
    records = []
    done = {p for p in partitions if ends[p] == 0 or consumer.position(p) >= ends[p]}
    while len(done) < len(partitions):
        batch = consumer.poll(timeout_ms=2000)
        if not batch:
            done |= {p for p in partitions if consumer.position(p) >= ends[p]}
            continue
        for partition, messages in batch.items():
            for m in messages:
                records.append({
                    "partition": m.partition, "offset": m.offset, "timestamp": m.timestamp,
                    "key": m.key, "value": m.value,
                    "headers": [(k, v) for k, v in m.headers],
                })
            if consumer.position(partition) >= ends[partition]:
                done.add(partition)
    consumer.close()
    return records


def expected(records, key=None, header=None, user=None, start=None, end=None):
    matches = []
    for r in records:
        if key is not None and r["key"] != key.encode():
            continue
        if header is not None and (header[0], header[1].encode()) not in r["headers"]:
            continue
        if user is not None:
            try:
                value = json.loads(r["value"])
            except (TypeError, ValueError):
                continue
            if not isinstance(value, dict) or str(value.get("user", {}).get("id")) != user:
                continue
        if start is not None and r["timestamp"] < start:
            continue
        if end is not None and r["timestamp"] > end:
            continue
        matches.append((r["partition"], r["offset"]))
    return sorted(matches)


def produce(broker, topic, start, count):
    """`count` records by confluent-kafka (lz4) and as many by kafka-python (gzip), with
    keys order-N, a trace header and a JSON value with user.id; then one transaction
    committed and one aborted, by confluent-kafka."""
    def record(i):
        return (f"order-{i % 40}".encode(),
                json.dumps({"user": {"id": i % 13}, "n": i}).encode(),
                [("trace", f"t{i % 25}".encode())])
    producer = Producer({"bootstrap.servers": broker.address, "compression.type": "lz4",
                         "linger.ms": 5})
    for i in range(start, start + count):
        key, value, headers = record(i)
        producer.produce(topic, key=key, value=value, headers=headers)
    producer.flush(30)
    kp = KafkaProducer(bootstrap_servers=broker.address, compression_type="gzip")
    for i in range(start + count, start + 2 * count):
        key, value, headers = record(i)
        kp.send(topic, key=key, value=value, headers=headers)
    kp.flush(30)
    kp.close()
    txn = Producer({"bootstrap.servers": broker.address,
                    "transactional.id": f"index-{uuid.uuid4().hex[:6]}"})
    txn.init_transactions(30)
    for commit in (True, False):
        txn.begin_transaction()
        for i in range(20):
            txn.produce(topic, key=b"order-1", value=json.dumps({"user": {"id": 1}}).encode(),
                        headers=[("trace", b"t1"), ("txn", b"yes" if commit else b"no")])
        # Flushed first: an abort would drop what was not sent yet.
        txn.flush(30)
        if commit:
            txn.commit_transaction(30)
        else:
            txn.abort_transaction(30)


def check_exact(broker, topic, url=None):
    """Lookups of each field agree with a full scan, whatever the index holds now."""
    records = scan(broker, topic)
    assert records, "nothing was read back"
    aborted = [r for r in records if ("txn", b"no") in r["headers"]]
    assert not aborted, "read_committed showed aborted records"
    for params, wanted in [
        ({"key": "order-1"}, expected(records, key="order-1")),
        ({"key": "order-39"}, expected(records, key="order-39")),
        ({"key": "no-such-order"}, []),
        ({"header.trace": "t3"}, expected(records, header=("trace", "t3"))),
        ({"field.user.id": "5"}, expected(records, user="5")),
    ]:
        answer = find(broker, topic, url, **params)
        assert found(answer) == wanted, (params, answer.get("scanned_bytes"))
        for m in answer["messages"]:
            assert "no" not in [h["value"]["data"] for h in m["headers"] if h["key"] == "txn"]
    return records


def leader_admin(broker, topic, partition):
    """The admin URL of the broker leading the partition."""
    with urllib.request.urlopen(f"{broker.admin_url}/api/topics/{topic}", timeout=10) as answer:
        leader = json.load(answer)["partitions"][partition]["leader"]
    return broker.admin_url_of(leader)


def index_info(broker, topic):
    with urllib.request.urlopen(f"{broker.admin_url}/api/topics/{topic}", timeout=10) as answer:
        return json.load(answer)["index"]


def chunk_files(broker, topic):
    """Embedded mode: the topic's index chunks on disk."""
    topic_id = os.path.basename(topic_dir(broker, topic))
    root = os.path.join(broker.data_dir, "data", "index", topic_id)
    return sorted(os.path.join(d, f) for d, _, files in os.walk(root) for f in files
                  if f.endswith(".spix"))


def wait_for(condition, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_lookups_find_exactly_what_a_full_scan_finds(make_broker):
    broker = make_broker(*SETTINGS)
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    create(broker, topic, **{"index.fields": FIELDS})
    produce(broker, topic, 0, 300)
    records = check_exact(broker, topic)
    # Once the leaders have indexed everything, the answers come from chunks and the
    # tails, not from reading the log.
    if LOCAL:
        wait_for(lambda: find(broker, topic, key="order-7")["scanned_bytes"] == 0,
                 "the index to catch up")
        assert len(chunk_files(broker, topic)) >= 3
        answer = find(broker, topic, key="order-7")
        assert answer["chunks_read"] >= 1 and answer["batches_read"] >= 1
    else:
        # Each partition's leader answers from its chunks and tail; another broker
        # reads the leader's chunks from the object store.
        for partition in range(3):
            key = next(r["key"].decode() for r in records if r["partition"] == partition)
            leader = leader_admin(broker, topic, partition)
            wait_for(lambda: find(broker, topic, leader, key=key,
                                  partition=partition)["scanned_bytes"] == 0,
                     "the leader's index to catch up")
            other = next((url for url in broker.admin_urls if url != leader), None)
            if other is None:
                continue
            wait_for(lambda: find(broker, topic, other, key=key,
                                  partition=partition)["chunks_read"] >= 1,
                     "a chunk in the object store")
    for url in broker.admin_urls:
        check_exact(broker, topic, url)
    # Newest first by default, oldest first on request, and a limit takes the first.
    wanted = sorted(
        ((r["timestamp"], r["partition"], r["offset"]) for r in records
         if r["key"] == b"order-7"))
    newest = find(broker, topic, key="order-7", limit=5)["messages"]
    assert [(m["timestamp"], m["partition"], m["offset"]) for m in newest] == wanted[::-1][:5]
    oldest = find(broker, topic, key="order-7", limit=5, order="oldest")["messages"]
    assert [(m["timestamp"], m["partition"], m["offset"]) for m in oldest] == wanted[:5]
    # A time range, and one partition.
    middle = wanted[len(wanted) // 2][0]
    assert found(find(broker, topic, key="order-7", **{"from": middle})) == \
        expected(records, key="order-7", start=middle)
    assert found(find(broker, topic, key="order-7", to=middle)) == \
        expected(records, key="order-7", end=middle)
    assert found(find(broker, topic, key="order-7", partition=1)) == \
        [x for x in expected(records, key="order-7") if x[0] == 1]
    # Records carry their key, value and headers.
    first = find(broker, topic, **{"field.user.id": "5"}, limit=1)["messages"][0]
    assert first["key"]["data"].startswith("order-")
    assert json.loads(first["value"]["data"])["user"]["id"] == 5
    assert any(h["key"] == "trace" for h in first["headers"])
    # spool find asks the same API.
    run = subprocess.run([SPOOL_BIN, "find", topic, "--key", "order-7", "-n", "1000",
                          "--brokers", broker.address, "--admin-url", broker.admin_url,
                          "--format", "json"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert sorted((m["partition"], m["offset"]) for m in lines) == expected(records, key="order-7")
    assert all(m["key"] == "order-7" for m in lines)
    run = subprocess.run([SPOOL_BIN, "find", topic, "--header", "trace=t3", "-n", "3",
                          "-f", r"%p:%o %k\n", "--brokers", broker.address,
                          "--admin-url", broker.admin_url], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.splitlines()) == 3
    # Refusals: a field the topic does not index, a topic without an index.
    with pytest.raises(urllib.error.HTTPError) as refused:
        find(broker, topic, **{"header.other": "x"})
    assert refused.value.code == 400
    assert "does not index header:other" in json.load(refused.value)["message"]
    run = subprocess.run([SPOOL_BIN, "find", "no-such-topic", "--key", "k", "--brokers",
                          broker.address, "--admin-url", broker.admin_url],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "does not exist" in run.stderr


def test_answers_stay_exact_after_kill9_and_delete_records(make_broker):
    broker = make_broker(*SETTINGS)
    topic = f"kept-{uuid.uuid4().hex[:6]}"
    create(broker, topic, **{"index.fields": FIELDS})
    produce(broker, topic, 0, 200)
    check_exact(broker, topic)
    if LOCAL:
        wait_for(lambda: len(chunk_files(broker, topic)) >= 3, "chunks")
    broker.kill9()
    broker.start()
    produce(broker, topic, 400, 100)
    records = check_exact(broker, topic)
    # DeleteRecords: what is below the new log start is never answered, and chunks
    # wholly below it go.
    ends = {}
    for r in records:
        ends[r["partition"]] = max(ends.get(r["partition"], 0), r["offset"])
    before = chunk_files(broker, topic) if LOCAL else []
    # In embedded mode, at the end of partition 0's first chunk: that chunk goes.
    firsts = [f for f in before if f"{os.sep}0{os.sep}" in f]
    cut = int(os.path.basename(firsts[0]).split("-")[1].split(".")[0]) if firsts else ends[0] // 2
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.delete_records([TopicPartition(topic, 0, cut)])[TopicPartition(topic, 0, cut)].result(15)
    remaining = [r for r in records if not (r["partition"] == 0 and r["offset"] < cut)]
    for key in ("order-1", "order-20"):
        assert found(find(broker, topic, key=key)) == expected(remaining, key=key)
    check_exact(broker, topic)
    if LOCAL:
        def below_gone():
            gone = [f for f in before if f not in chunk_files(broker, topic)]
            return gone == firsts[:1]
        wait_for(below_gone, "the chunk below the log start to be deleted")


def test_retention_takes_records_and_chunks_away(make_broker):
    broker = make_broker(*SETTINGS, "log.retention.check.interval.ms=300")
    topic = f"retained-{uuid.uuid4().hex[:6]}"
    create(broker, topic, partitions=1, **{"index.fields": "key", "segment.bytes": "2048",
                                           "retention.bytes": "8192"})
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 0})
    for i in range(400):
        producer.produce(topic, key=f"k{i % 20}".encode(), value=f"{i:04d}".encode() * 20,
                         partition=0)
        if i % 10 == 9:
            producer.flush(10)
    producer.flush(10)

    def trimmed():
        start = KafkaConsumer(bootstrap_servers=broker.address).beginning_offsets(
            [KPTopicPartition(topic, 0)])[KPTopicPartition(topic, 0)]
        return start > 0 and start

    wait_for(trimmed, "retention to move the log start", timeout=60)
    # Until retention is done (shared storage trims in several passes).
    settled = []

    def still():
        settled.append(trimmed())
        return len(settled) > 4 and len(set(settled[-5:])) == 1
    wait_for(still, "retention to settle", timeout=60)
    start = settled[-1]
    records = scan(broker, topic)
    assert min(r["offset"] for r in records) >= start
    for key in ("k0", "k7", "k19"):
        assert found(find(broker, topic, key=key)) == expected(records, key=key)
    # Chunks wholly below the log start go: what is left is at most the records kept
    # and those of the one chunk across the log start (about 20 records of 1 KiB
    # chunks).
    wait_for(lambda: index_info(broker, topic)["records"] <= 400 - start + 30,
             "old chunks to go")


def test_fields_indexed_later_and_a_deleted_topics_index(make_broker):
    broker = make_broker(*SETTINGS)
    topic = f"later-{uuid.uuid4().hex[:6]}"
    create(broker, topic)
    produce(broker, topic, 0, 100)
    with pytest.raises(urllib.error.HTTPError) as refused:
        find(broker, topic, key="order-1")
    assert refused.value.code == 400 and "has no index" in json.load(refused.value)["message"]
    kp_admin = KafkaAdminClient(bootstrap_servers=broker.address)
    kp_admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                           configs={"index.fields": "key"})])
    wait_for(lambda: _indexes(broker, topic), "index.fields to be taken")
    check_key = lambda: found(find(broker, topic, key="order-1")) == \
        expected(scan(broker, topic), key="order-1")  # noqa: E731
    assert check_key()
    # The old records get indexed in the background: nothing is read from the log.
    if LOCAL:
        wait_for(lambda: find(broker, topic, key="order-3")["scanned_bytes"] == 0,
                 "the old records to be indexed")
    kp_admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                           configs={"index.fields": "key,header:trace"})])
    wait_for(lambda: _indexes(broker, topic, "header:trace"), "the new field")
    assert found(find(broker, topic, **{"header.trace": "t4"})) == \
        expected(scan(broker, topic), header=("trace", "t4"))
    if LOCAL:
        wait_for(lambda: find(broker, topic, **{"header.trace": "t4"})["scanned_bytes"] == 0,
                 "the chunks to be built again with the new field")
        directory = os.path.dirname(os.path.dirname(chunk_files(broker, topic)[0]))
        kp_admin.delete_topics([topic])
        wait_for(lambda: not os.path.exists(directory), "the deleted topic's index to go")
    kp_admin.close()


def _indexes(broker, topic, field="key"):
    try:
        find(broker, topic, **{field.replace("header:", "header.") if ":" in field else field: "x"})
        return True
    except urllib.error.HTTPError:
        return False


def test_compaction_keeps_answers_exact(make_broker):
    broker = make_broker(*SETTINGS, "log.cleaner.backoff.ms=200")
    topic = f"latest-{uuid.uuid4().hex[:6]}"
    # Not compacted until the index has chunks: then the cleaner goes over them.
    configs = {"index.fields": "key,header:v", "segment.bytes": "1024",
               "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "100"}
    create(broker, topic, partitions=1, **configs)
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 0})
    for version in range(30):
        for k in range(5):
            producer.produce(topic, key=f"k{k}".encode(), value=f"k{k}-v{version}".encode() * 8,
                             headers=[("v", str(version).encode())])
        producer.flush(10)
    wait_for(lambda: index_info(broker, topic)["records"] >= 100, "chunks")
    before = index_info(broker, topic)["records"]
    # AlterConfigs replaces the topic's configs: all of them again, compacted.
    KafkaAdminClient(bootstrap_servers=broker.address).alter_configs([ConfigResource(
        ConfigResourceType.TOPIC, topic, configs={**configs, "cleanup.policy": "compact"})])

    def cleaned():
        return len(scan(broker, topic)) < 60
    wait_for(cleaned, "the cleaner", timeout=60)
    records = scan(broker, topic)
    for k in range(5):
        assert found(find(broker, topic, key=f"k{k}")) == expected(records, key=f"k{k}")
    assert found(find(broker, topic, **{"header.v": "3"})) == expected(records, header=("v", "3"))
    # The chunks the cleaner went over are built again without the records it removed
    # where they can be (best effort: see docs/index.md); the answers stay exact.
    assert len(records) < before
    time.sleep(2)
    for k in range(5):
        assert found(find(broker, topic, key=f"k{k}")) == expected(records, key=f"k{k}")

def read_view_librdkafka(broker, topic, isolation="read_committed"):
    """(offset, value) of every record of partition 0 of `topic`, by confluent-kafka."""
    from confluent_kafka import Consumer, KafkaError
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": uuid.uuid4().hex,
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": isolation, "fetch.max.bytes": 65536,
                         "message.max.bytes": 65536, "max.partition.fetch.bytes": 16384})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.time() + 60
    while time.time() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error():
            if message.error().code() == KafkaError._PARTITION_EOF:
                break
            raise AssertionError(message.error())
        got.append((message.offset(), message.value().decode()))
    consumer.close()
    return got


def read_view_kafka_python(broker, topic, isolation):
    consumer = KafkaConsumer(bootstrap_servers=broker.address, enable_auto_commit=False,
                             isolation_level=isolation, consumer_timeout_ms=4000)
    consumer.assign([KPTopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    got = [(m.offset, m.value.decode()) for m in consumer]
    consumer.close()
    return got


def metric(url, name, topic):
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith(f'{name}{{topic="{topic}"}}'):
                return float(line.split()[-1])
    return 0.0


def test_a_view_of_an_indexed_header_jumps_to_its_matches(make_broker):
    """A view whose filter requires an indexed header reads the source's index and
    jumps to the candidates; it shows the same records as a view the index cannot
    serve, to librdkafka and kafka-python, read_committed and read_uncommitted."""
    broker = make_broker(*SETTINGS)
    source = f"events-{uuid.uuid4().hex[:6]}"
    create(broker, source, partitions=1, **{"index.fields": "header:region,header:spool.tag"})
    create(broker, f"{source}-eu", -1, **{"view.source.topic": source,
                                          "view.filter.sql": "region = 'eu'"})
    create(broker, f"{source}-eu-scan", -1, **{"view.source.topic": source,
                                               "view.filter.sql": "region = 'eu' OR FALSE"})
    create(broker, f"{source}-rare", -1, **{"view.source.topic": source,
                                            "view.filter": "Rare"})
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 20,
                         "compression.type": "zstd"})
    for i in range(3000):
        rare = i % 250 == 0
        headers = [("region", b"eu" if rare else b"us"),
                   ("spool.tag", b"Rare" if i % 700 == 3 else b"Common")]
        producer.produce(source, value=f"v{i}".encode(), partition=0, headers=headers)
    producer.flush(30)
    txn = Producer({"bootstrap.servers": broker.address,
                    "transactional.id": f"view-{uuid.uuid4().hex[:6]}"})
    txn.init_transactions(30)
    for commit in (False, True):
        txn.begin_transaction()
        for i in range(5):
            txn.produce(source, value=f"{'kept' if commit else 'aborted'}{i}".encode(),
                        partition=0, headers=[("region", b"eu")])
        # Flushed first: an abort would drop what was not sent yet.
        txn.flush(30)
        if commit:
            txn.commit_transaction(30)
        else:
            txn.abort_transaction(30)
    for i in range(200):
        producer.produce(source, value=f"w{i}".encode(), partition=0,
                         headers=[("region", b"us")])
    producer.flush(30)
    leader = leader_admin(broker, source, 0)
    wait_for(lambda: find(broker, source, leader, **{"header.region": "eu"},
                          partition=0)["scanned_bytes"] == 0, "the index")
    committed = read_view_librdkafka(broker, f"{source}-eu-scan")
    assert [v for _, v in committed] == \
        [f"v{i}" for i in range(0, 3000, 250)] + [f"kept{i}" for i in range(5)]
    assert read_view_librdkafka(broker, f"{source}-eu") == committed
    assert read_view_kafka_python(broker, f"{source}-eu", "read_committed") == committed
    uncommitted = read_view_kafka_python(broker, f"{source}-eu-scan", "read_uncommitted")
    assert len(uncommitted) == len(committed) + 5
    assert read_view_kafka_python(broker, f"{source}-eu", "read_uncommitted") == uncommitted
    rare = read_view_librdkafka(broker, f"{source}-rare")
    assert [v for _, v in rare] == [f"v{i}" for i in range(3000) if i % 700 == 3]
    assert metric(leader, "spool_view_index_jumps_total", f"{source}-eu") > 0
    assert metric(leader, "spool_view_index_jumps_total", f"{source}-rare") > 0
    assert metric(leader, "spool_view_index_jumps_total", f"{source}-eu-scan") == 0


def test_the_console_finds_what_the_api_finds(make_broker, browser_page):
    from playwright.sync_api import expect
    broker = make_broker(*SETTINGS)
    topic = f"console-{uuid.uuid4().hex[:6]}"
    create(broker, topic, **{"index.fields": FIELDS})
    produce(broker, topic, 0, 100)
    wanted = find(broker, topic, **{"field.user.id": "4"}, limit=20)["messages"]
    assert wanted
    page = browser_page
    page.set_default_timeout(20000)
    page.goto(f"{broker.admin_url}/#/topics/{topic}")
    expect(page.locator("h2", has_text="Find by value")).to_be_visible()
    page.select_option("#search select[name=field]", "value:$.user.id")
    page.fill("#search input[name=value]", "4")
    page.fill("#search input[name=limit]", "20")
    page.click("#search button[type=submit]")
    rows = page.locator("#found tbody tr")
    expect(rows).to_have_count(len(wanted))
    for row, message in zip(rows.all(), wanted):
        cells = row.locator("td")
        expect(cells.nth(0)).to_have_text(str(message["partition"]))
        expect(cells.nth(1)).to_have_text(str(message["offset"]))
    expect(rows.first).to_contain_text(wanted[0]["key"]["data"])
    shot(page, "topic-find")
    # A topic without an index has no search box.
    create(broker, f"{topic}-plain")
    page.goto(f"{broker.admin_url}/#/topics/{topic}-plain")
    expect(page.locator("h2", has_text="Configs")).to_be_visible()
    expect(page.locator("#search")).to_have_count(0)


@pytest.mark.skipif(CLUSTER == 1, reason="a leader move needs a cluster")
def test_a_new_leader_goes_on_from_the_chunks(make_broker):
    broker = make_broker(*SETTINGS)
    topic = f"moved-{uuid.uuid4().hex[:6]}"
    create(broker, topic, partitions=1, **{"index.fields": FIELDS})
    produce(broker, topic, 0, 200)
    old = leader_admin(broker, topic, 0)
    wait_for(lambda: find(broker, topic, old, key="order-3")["scanned_bytes"] == 0, "the index")
    node = broker.admin_urls.index(old) + 1
    broker.kill9_node(node)
    survivor = next(url for url in broker.admin_urls if url != old)

    def moved():
        try:
            with urllib.request.urlopen(f"{survivor}/api/topics/{topic}", timeout=5) as answer:
                leader = json.load(answer)["partitions"][0]["leader"]
            return leader not in (-1, node) and broker.admin_url_of(leader)
        except (urllib.error.URLError, OSError):
            return False
    new = wait_for(moved, "a new leader", timeout=60)
    # Clients bootstrap from a live broker.
    broker.port = broker.ports[broker.admin_urls.index(new)]
    produce(broker, topic, 1000, 50)
    records = check_exact(broker, topic, new)
    wait_for(lambda: find(broker, topic, new, key="order-3")["scanned_bytes"] == 0,
             "the new leader's index")
    assert found(find(broker, topic, new, key="order-3")) == expected(records, key="order-3")
    broker.start_node(node)
