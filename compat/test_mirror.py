"""Mirror links (BMQ's Mirror): a source cluster's topics copied to a target cluster at
their own offsets. Source and target are two Spool brokers (or clusters) of this
machine; the link is made with the CLI on the target. Readers: confluent-kafka
(librdkafka) and kafka-python, on both sides."""

import json
import subprocess
import urllib.error
import urllib.request
import tempfile
import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import CLUSTER, SPOOL_BIN, Broker


@pytest.fixture
def clusters():
    """A source and a target, each with its own data directory."""
    with tempfile.TemporaryDirectory() as source_dir, tempfile.TemporaryDirectory() as target_dir:
        source = Broker(source_dir).start()
        target = Broker(target_dir).start()
        yield source, target
        target.stop()
        source.stop()


def spool(target, *args, check=True):
    """`spool ARGS --brokers TARGET --admin-url …`: (exit code, stdout, stderr)."""
    done = subprocess.run(
        [SPOOL_BIN, *args, "--brokers", target.address, "--admin-url", target.admin_url],
        capture_output=True, text=True, timeout=60)
    if check:
        assert done.returncode == 0, done.stderr
    return done.returncode, done.stdout, done.stderr


def describe(target, name):
    return json.loads(spool(target, "mirror", "describe", name, "--format", "json")[1])


def create_topic(broker, name, partitions, config=None):
    admin = AdminClient({"bootstrap.servers": broker.address})
    future = admin.create_topics([NewTopic(name, partitions, config=config or {})])[name]
    future.result(30)


def produce(broker, topic, count, partitions, prefix="v"):
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, key=f"k{i}".encode(), value=f"{prefix}{i}".encode(),
                         headers=[("n", str(i).encode())], partition=i % partitions)
    assert producer.flush(30) == 0


def records(broker, topic, partitions, isolation="read_uncommitted"):
    """Every record of `topic` as (partition, offset, timestamp, key, value, headers)."""
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": f"r-{uuid.uuid4()}",
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    found, ended, deadline = [], set(), time.time() + 30
    while len(ended) < partitions and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error():
            ended.add(message.partition())
            continue
        found.append((message.partition(), message.offset(), message.timestamp()[1],
                      message.key(), message.value(), tuple(message.headers() or ())))
    consumer.close()
    return sorted(found)


def kafka_python_records(broker, topic, partitions, isolation="read_uncommitted"):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition
    consumer = KafkaConsumer(bootstrap_servers=broker.address, enable_auto_commit=False,
                             isolation_level=isolation, consumer_timeout_ms=3000)
    consumer.assign([KafkaTopicPartition(topic, p) for p in range(partitions)])
    consumer.seek_to_beginning()
    found = sorted((m.partition, m.offset, m.key, m.value) for m in consumer)
    consumer.close()
    return found


def end_offsets(broker, topic, partitions):
    consumer = Consumer({"bootstrap.servers": broker.address, "group.id": "ends",
                         "isolation.level": "read_uncommitted"})
    ends = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)]
    consumer.close()
    return ends


def wait_until(predicate, timeout=30, what="the mirror to catch up"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if predicate():
                return
        except KafkaException:
            pass  # The topic is not there yet.
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def caught_up(source, target, topic, partitions):
    def check():
        try:
            return end_offsets(target, topic, partitions) == end_offsets(source, topic, partitions)
        except KafkaException:
            return False
    return check


def link(target, source, name, *extra):
    spool(target, "mirror", "create", name, "--source", source.address, *extra)


def test_records_are_copied_at_their_offsets_with_everything_they_carry(clusters):
    source, target = clusters
    create_topic(source, "orders", 3, {"cleanup.policy": "delete"})
    produce(source, "orders", 60, 3)
    # A committed and an aborted transaction, then more plain records.
    for commit in (True, False):
        producer = Producer({"bootstrap.servers": source.address,
                             "transactional.id": f"t-{commit}"})
        producer.init_transactions(30)
        producer.begin_transaction()
        for i in range(5):
            producer.produce("orders", value=f"txn-{commit}-{i}".encode(), partition=i % 3)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    produce(source, "orders", 30, 3, prefix="late")
    link(target, source, "eu", "--topics", "ord.*")
    wait_until(caught_up(source, target, "orders", 3))

    assert records(target, "orders", 3) == records(source, "orders", 3)
    committed = records(target, "orders", 3, "read_committed")
    assert committed == records(source, "orders", 3, "read_committed")
    values = {r[4] for r in committed}
    assert b"txn-True-0" in values and b"txn-False-0" not in values
    # kafka-python agrees, on both sides.
    assert kafka_python_records(target, "orders", 3, "read_committed") == \
        kafka_python_records(source, "orders", 3, "read_committed")
    # Records written later are copied too, and a topic made later is mirrored.
    produce(source, "orders", 9, 3, prefix="later")
    create_topic(source, "orders-new", 2)
    produce(source, "orders-new", 10, 2)
    wait_until(caught_up(source, target, "orders", 3))
    wait_until(caught_up(source, target, "orders-new", 2))
    assert records(target, "orders-new", 2) == records(source, "orders-new", 2)
    # Each broker reports what it copies every two seconds; describe shows them all.
    def described():
        info = describe(target, "eu")
        return (info["state"] == "running" and info["error"] is None
                and sorted(info["mirror_topics"]) == ["orders", "orders-new"]
                and len(info["partitions"]) == 5 and info["copied_bytes"] > 0
                and all(p["lag_records"] == 0 and p["lag_ms"] == 0 for p in info["partitions"]))
    wait_until(described, what="describe to show every partition caught up")


def test_a_mirror_topic_is_read_only_until_failover_then_continues_at_its_end(clusters):
    source, target = clusters
    create_topic(source, "payments", 2)
    produce(source, "payments", 20, 2)
    # A source transaction still open when the target fails over.
    open_txn = Producer({"bootstrap.servers": source.address, "transactional.id": "open-one",
                         "transaction.timeout.ms": 600000})
    open_txn.init_transactions(30)
    open_txn.begin_transaction()
    open_txn.produce("payments", value=b"never-decided", partition=1)
    open_txn.flush(30)
    link(target, source, "dr", "--topics", "payments")
    wait_until(caught_up(source, target, "payments", 2))

    producer = Producer({"bootstrap.servers": target.address, "message.send.max.retries": 0})
    errors = []
    producer.produce("payments", value=b"refused", partition=0,
                     on_delivery=lambda error, message: errors.append(error))
    producer.flush(30)
    assert errors and errors[0] is not None
    assert errors[0].code() == 17, errors  # INVALID_TOPIC_EXCEPTION
    from kafka import KafkaProducer
    from kafka.errors import KafkaError
    kafka_python = KafkaProducer(bootstrap_servers=target.address, retries=0)
    with pytest.raises(KafkaError) as refused:
        kafka_python.send("payments", b"refused", partition=1).get(timeout=30)
    # kafka-python shows the broker's message: it names the link and the way out.
    assert "read-only mirror (link dr)" in str(refused.value), refused.value
    assert "spool mirror failover dr" in str(refused.value)
    kafka_python.close()
    # Nothing else a client could write with is let through either.
    code, _, stderr = spool(target, "topic", "alter-config", "payments", "--set",
                            "mirror.link=", check=False)
    assert code != 0

    _, out, _ = spool(target, "mirror", "failover", "dr", "--format", "json")
    failed = json.loads(out)
    source_ends = end_offsets(source, "payments", 2)
    assert [topic["topic"] for topic in failed] == ["payments"]
    # Partition 1 gains the abort marker of the source's open transaction, written by
    # its leader (in a cluster, maybe another broker, within a second).
    ends = [source_ends[0], source_ends[1] + 1]
    assert failed[0]["log_ends"][0] == ends[0]
    assert failed[0]["log_ends"][1] in (source_ends[1], ends[1])
    wait_until(lambda: end_offsets(target, "payments", 2) == ends, what="the abort marker")
    # An idempotent producer of the target (whose ids may be the source's numbers)
    # writes at the mirrored end; the source's open transaction was aborted, so
    # read_committed readers go past it.
    delivered = []
    producer = Producer({"bootstrap.servers": target.address, "enable.idempotence": True})
    for partition in (0, 1):
        producer.produce("payments", value=b"after-failover", partition=partition,
                         on_delivery=lambda error, message: delivered.append(
                             (error, message.partition(), message.offset())))
    producer.flush(30)
    assert sorted(delivered) == [(None, 0, ends[0]), (None, 1, ends[1])], delivered
    committed = [r[4] for r in records(target, "payments", 2, "read_committed")]
    assert committed.count(b"after-failover") == 2 and b"never-decided" not in committed
    assert kafka_python_records(target, "payments", 2, "read_committed")[-1][3] == b"after-failover"
    # The source goes on without the target, which no longer copies the topic.
    open_txn.commit_transaction(30)
    produce(source, "payments", 4, 2, prefix="after")
    time.sleep(2)
    assert end_offsets(target, "payments", 2) == [ends[0] + 1, ends[1] + 1]
    info = describe(target, "dr")
    assert info["failed_over"] == ["payments"]
    # Its topics all failed over, the link can go.
    spool(target, "mirror", "delete", "dr")
    assert json.loads(spool(target, "mirror", "list", "--format", "json")[1]) == []


def test_group_offsets_are_copied_and_a_group_resumes_on_the_mirror(clusters):
    source, target = clusters
    create_topic(source, "events", 2)
    produce(source, "events", 40, 2)
    consumer = Consumer({"bootstrap.servers": source.address, "group.id": "billing",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["events"])
    seen = 0
    while seen < 25:
        message = consumer.poll(1)
        if message is not None and not message.error():
            seen += 1
            last = message
    consumer.commit(asynchronous=False)
    committed = {p.partition: p.offset for p in consumer.committed(
        [TopicPartition("events", 0), TopicPartition("events", 1)], timeout=10)}
    consumer.close()
    link(target, source, "groups", "--topics", "events", "--groups", "bill.*")
    wait_until(caught_up(source, target, "events", 2))

    def copied():
        probe = Consumer({"bootstrap.servers": target.address, "group.id": "billing"})
        found = {p.partition: p.offset for p in probe.committed(
            [TopicPartition("events", 0), TopicPartition("events", 1)], timeout=10)}
        probe.close()
        return found == committed
    wait_until(copied, what=f"the group's offsets: {describe(target, 'groups')}")
    # The group moved to the mirror reads only what it had not read.
    consumer = Consumer({"bootstrap.servers": target.address, "group.id": "billing",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["events"])
    rest, deadline = [], time.time() + 30
    while len(rest) < 40 - 25 and time.time() < deadline:
        message = consumer.poll(1)
        if message is not None and not message.error():
            rest.append((message.partition(), message.offset()))
    consumer.close()
    assert len(rest) == 15 and all(offset >= committed[p] for p, offset in rest), rest
    wait_until(lambda: describe(target, "groups")["offsets_copied"] >= 2, what="the count")


def test_a_source_that_is_down_shows_as_an_error_and_the_link_recovers(clusters):
    source, target = clusters
    create_topic(source, "audit", 1)
    produce(source, "audit", 10, 1)
    link(target, source, "flaky", "--topics", "audit")
    wait_until(caught_up(source, target, "audit", 1))
    source.stop()
    wait_until(lambda: describe(target, "flaky")["state"] == "failed", what="the error")
    assert "audit" not in (describe(target, "flaky")["error"] or "audit")
    source.start()
    produce(source, "audit", 5, 1, prefix="back")
    wait_until(caught_up(source, target, "audit", 1), timeout=60)
    wait_until(lambda: describe(target, "flaky")["state"] == "running", what="recovery")
    assert records(target, "audit", 1) == records(source, "audit", 1)


def test_a_paused_link_copies_nothing_until_resumed(clusters):
    source, target = clusters
    create_topic(source, "clicks", 1)
    produce(source, "clicks", 5, 1)
    link(target, source, "p", "--topics", "clicks")
    wait_until(caught_up(source, target, "clicks", 1))
    spool(target, "mirror", "pause", "p")
    assert describe(target, "p")["state"] == "paused"
    # A paused link copies no partition: describe shows none (within a report).
    wait_until(lambda: describe(target, "p")["partitions"] == [], what="the copies to stop")
    time.sleep(1.5)
    produce(source, "clicks", 5, 1, prefix="held")
    time.sleep(2)
    assert end_offsets(target, "clicks", 1) == [5]
    spool(target, "mirror", "resume", "p")
    wait_until(caught_up(source, target, "clicks", 1))
    assert records(target, "clicks", 1) == records(source, "clicks", 1)


def delete_records(broker, topic, partition, before):
    admin = AdminClient({"bootstrap.servers": broker.address})
    result = admin.delete_records([TopicPartition(topic, partition, before)])
    for future in result.values():
        future.result(30)


def test_records_the_source_removed_before_they_were_copied_are_skipped_and_counted(clusters):
    source, target = clusters
    create_topic(source, "trimmed", 1)
    # One producer batch of 10 records, then more: the source's log will start inside it.
    producer = Producer({"bootstrap.servers": source.address, "linger.ms": 200})
    for i in range(10):
        producer.produce("trimmed", value=f"batch-{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    produce(source, "trimmed", 5, 1, prefix="more")
    delete_records(source, "trimmed", 0, 5)
    link(target, source, "trim", "--topics", "trimmed")
    wait_until(caught_up(source, target, "trimmed", 1))
    # The mirror copied the batch its source's log starts in whole, and starts where
    # the source starts.
    assert records(target, "trimmed", 1) == records(source, "trimmed", 1)
    assert records(target, "trimmed", 1)[0][1] == 5
    assert kafka_python_records(target, "trimmed", 1) == kafka_python_records(source, "trimmed", 1)
    # The link paused, the source takes more and removes them before they are copied.
    spool(target, "mirror", "pause", "trim")
    time.sleep(1.5)
    produce(source, "trimmed", 20, 1, prefix="lost")
    produce(source, "trimmed", 5, 1, prefix="kept")
    delete_records(source, "trimmed", 0, 35)
    spool(target, "mirror", "resume", "trim")
    wait_until(caught_up(source, target, "trimmed", 1))
    copied = records(target, "trimmed", 1)
    assert [r[4] for r in copied if r[1] >= 35] == [f"kept{i}".encode() for i in range(5)]
    assert not any(r[4].startswith(b"lost") for r in copied)
    assert [r[1] for r in copied if r[1] >= 35] == [35, 36, 37, 38, 39]
    wait_until(lambda: describe(target, "trim")["skipped_records"] == 20,
               what="the skipped records to be counted")
    _, out, _ = spool(target, "mirror", "describe", "trim")
    assert "20 records the source removed" in out, out
    if CLUSTER == 1:  # In a cluster, the partition's leader counts them.
        with urllib.request.urlopen(f"{target.admin_url}/metrics", timeout=10) as answer:
            metrics = answer.read().decode()
        assert 'spool_mirror_skipped_records_total{link="trim"} 20' in metrics


def test_a_link_deleted_right_after_failover_leaves_no_partition_unsettled(clusters):
    source, target = clusters
    create_topic(source, "ledger", 3)
    produce(source, "ledger", 30, 3)
    # A source transaction open in every partition.
    open_txn = Producer({"bootstrap.servers": source.address, "transactional.id": "ledger-open",
                         "transaction.timeout.ms": 600000})
    open_txn.init_transactions(30)
    open_txn.begin_transaction()
    for partition in range(3):
        open_txn.produce("ledger", value=b"undecided", partition=partition)
    open_txn.flush(30)
    link(target, source, "gone", "--topics", "ledger")
    wait_until(caught_up(source, target, "ledger", 3))
    spool(target, "mirror", "failover", "gone")
    spool(target, "mirror", "delete", "gone")
    ends = [end + 1 for end in end_offsets(source, "ledger", 3)]  # an abort marker each
    # Every partition's leader settles it, link or not: writes go in after the markers,
    # and read_committed readers pass the source's open transaction.
    delivered = []
    producer = Producer({"bootstrap.servers": target.address, "enable.idempotence": True})
    for partition in range(3):
        producer.produce("ledger", value=b"after", partition=partition,
                         on_delivery=lambda error, message: delivered.append(
                             (error, message.partition(), message.offset())))
    assert producer.flush(30) == 0
    assert sorted(delivered) == [(None, p, ends[p]) for p in range(3)], delivered
    committed = [r[4] for r in records(target, "ledger", 3, "read_committed")]
    assert committed.count(b"after") == 3 and b"undecided" not in committed
    assert [r[3] for r in kafka_python_records(target, "ledger", 3, "read_committed")
            if r[3] == b"after"] == [b"after"] * 3
    open_txn.abort_transaction(30)


def test_the_cli_refuses_bad_links_and_deleting_a_link_with_read_only_topics(clusters):
    source, target = clusters
    for args, said in [
        (["--topics", "("], "topics"),
        (["--topics", "x", "--source-config", "acks=all"], "acks"),
        (["--topics", "x", "--source-config", "security.protocol=SASL_SSL"], "sasl.mechanism"),
    ]:
        code, _, stderr = spool(target, "mirror", "create", "bad", "--source", source.address,
                                *args, check=False)
        assert code != 0 and said in stderr, stderr
    create_topic(source, "kept", 1)
    link(target, source, "k", "--topics", "kept")
    wait_until(lambda: "kept" in describe(target, "k")["mirror_topics"], what="the topic")
    code, _, stderr = spool(target, "mirror", "create", "k", "--source", source.address,
                            "--topics", "kept", check=False)
    assert code != 0 and "exists" in stderr
    code, _, stderr = spool(target, "mirror", "delete", "k", check=False)
    assert code != 0 and "failover" in stderr, stderr
    code, _, stderr = spool(target, "mirror", "describe", "nope", check=False)
    assert code != 0
    _, out, _ = spool(target, "mirror", "list")
    assert "k" in out and source.address in out


def test_a_kill_9_of_the_target_during_catch_up_loses_and_repeats_nothing(clusters):
    source, target = clusters
    create_topic(source, "backlog", 4)
    producer = Producer({"bootstrap.servers": source.address, "linger.ms": 20})
    for i in range(40_000):
        producer.produce("backlog", key=f"k{i}".encode(), value=f"{i:06d}".encode() * 170,
                         partition=i % 4)
        if i % 10_000 == 0:
            producer.flush(30)
    assert producer.flush(60) == 0
    link(target, source, "catch", "--topics", "backlog")
    # Killed as soon as the copy is under way (each broker tells what it leads).
    def copied_so_far():
        total = 0
        for url in target.admin_urls:
            try:
                with urllib.request.urlopen(f"{url}/api/topics/backlog", timeout=2) as answer:
                    detail = json.load(answer)
            except (urllib.error.URLError, OSError):
                return 0
            total += sum(p["high_watermark"] or 0 for p in detail["partitions"])
        return total
    deadline = time.time() + 60
    while copied_so_far() == 0 and time.time() < deadline:
        time.sleep(0.02)
    at_kill = copied_so_far()
    target.kill9()
    assert 0 < at_kill, "the copy never started"
    target.start()
    wait_until(caught_up(source, target, "backlog", 4), timeout=120)
    copied = records(target, "backlog", 4)
    print(f"killed at {at_kill} of 40000 records copied")
    assert len(copied) == 40_000
    assert copied == records(source, "backlog", 4)


def test_a_compacted_source_keeps_its_offsets_and_gaps_on_the_mirror():
    with tempfile.TemporaryDirectory() as source_dir, tempfile.TemporaryDirectory() as target_dir:
        source = Broker(source_dir, settings=("log.cleaner.backoff.ms=200",)).start()
        target = Broker(target_dir).start()
        try:
            create_topic(source, "table", 1, {
                "cleanup.policy": "compact", "segment.bytes": "1024",
                "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "100"})
            producer = Producer({"bootstrap.servers": source.address, "linger.ms": 0})
            for version in range(30):
                for k in range(8):
                    producer.produce("table", key=f"k{k}".encode(), value=f"{k}-{version}".encode())
                producer.flush(10)
            for n in range(20):
                producer.produce("table", key=b"filler", value=b"x" * 100)
                producer.flush(10)
            wait_until(lambda: len(records(source, "table", 1)) < 100, timeout=60,
                       what="the source to be compacted")
            link(target, source, "compacted", "--topics", "table")
            wait_until(caught_up(source, target, "table", 1))
            mirrored = records(target, "table", 1)
            offsets = [r[1] for r in mirrored]
            assert offsets[-1] == 30 * 8 + 20 - 1 and len(offsets) < 100, offsets
            assert offsets != list(range(offsets[0], offsets[0] + len(offsets))), "gaps kept"
            source_records = {r[1]: r for r in records(source, "table", 1)}
            # What the mirror has is the source's, record for record, at its offsets.
            assert all(source_records.get(r[1]) == r for r in mirrored), mirrored
            assert kafka_python_records(target, "table", 1) == \
                [(p, o, k, v) for p, o, _, k, v, _ in mirrored]
            info = describe(target, "compacted")
            assert info["error"] is None, info
        finally:
            target.stop()
            source.stop()


@pytest.mark.skipif(CLUSTER > 1, reason="a SASL listener is tested on one broker")
def test_a_source_that_refuses_the_login_shows_it_and_the_right_login_copies():
    sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "mirror", "sasl.password": "s3cret"}
    with tempfile.TemporaryDirectory() as source_dir, tempfile.TemporaryDirectory() as target_dir:
        source = Broker(source_dir, settings=(
            "listeners=SASL_PLAINTEXT://127.0.0.1:{port}",
            "sasl.enabled.mechanisms=SCRAM-SHA-256"),
            args=("--bootstrap-user", "mirror:s3cret"), client=sasl).start()
        target = Broker(target_dir).start()
        try:
            admin = AdminClient({"bootstrap.servers": source.address, **sasl})
            admin.create_topics([NewTopic("secured", 1)])["secured"].result(30)
            producer = Producer({"bootstrap.servers": source.address, **sasl})
            for i in range(5):
                producer.produce("secured", value=f"s{i}".encode())
            assert producer.flush(30) == 0
            settings = ["--source-config", "security.protocol=SASL_PLAINTEXT",
                        "--source-config", "sasl.mechanism=SCRAM-SHA-256",
                        "--source-config", "sasl.username=mirror"]
            link(target, source, "wrong", "--topics", "secured", *settings,
                 "--source-config", "sasl.password=nope")
            wait_until(lambda: describe(target, "wrong")["state"] == "failed", what="the error")
            info = describe(target, "wrong")
            assert "mirror" in info["error"] and "fail" in info["error"], info
            assert info["source_config"]["sasl.password"] == "********"
            spool(target, "mirror", "delete", "wrong")
            link(target, source, "right", "--topics", "secured", *settings,
                 "--source-config", "sasl.password=s3cret")
            def copied():
                consumer = Consumer({"bootstrap.servers": target.address, "group.id": "x"})
                ends = consumer.get_watermark_offsets(TopicPartition("secured", 0), timeout=10)
                consumer.close()
                return ends[1] == 5
            wait_until(copied)
            assert [r[3] for r in kafka_python_records(target, "secured", 1)] == \
                [f"s{i}".encode() for i in range(5)]
        finally:
            target.stop()
            source.stop()


@pytest.mark.skipif(CLUSTER > 1, reason="the benchmark starts its own brokers")
def test_the_mirror_benchmark_runs_smoke():
    """scripts/bench-mirror, small: every measure is printed."""
    import os
    import sys
    done = subprocess.run(
        [sys.executable, os.path.join(os.path.dirname(__file__), "..", "scripts", "bench-mirror"),
         "--backlog-mib", "4", "--partitions", "2",
         "--rate-mb", "1", "--seconds", "3", "--produce-seconds", "1"],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, SPOOL_BIN=os.path.abspath(SPOOL_BIN)))
    assert done.returncode == 0, done.stderr
    for said in ("target's own produce rate", "catch-up:", "source:", "mirror:"):
        assert said in done.stdout, done.stdout


def test_partitions_and_configs_follow_the_source_and_writes_of_any_kind_are_refused(clusters):
    from confluent_kafka.admin import ConfigResource, NewPartitions
    source, target = clusters
    create_topic(source, "grows", 1, {"retention.ms": "3600000"})
    produce(source, "grows", 4, 1)
    link(target, source, "follow", "--topics", "grows")
    wait_until(caught_up(source, target, "grows", 1))
    source_admin = AdminClient({"bootstrap.servers": source.address})
    source_admin.create_partitions([NewPartitions("grows", 3)])["grows"].result(30)
    resource = ConfigResource(ConfigResource.Type.TOPIC, "grows",
                              set_config={"retention.ms": "7200000",
                                          "cleanup.policy": "delete"})
    source_admin.alter_configs([resource])[resource].result(30)
    produce(source, "grows", 9, 3, prefix="grown")
    wait_until(caught_up(source, target, "grows", 3))
    assert records(target, "grows", 3) == records(source, "grows", 3)
    target_admin = AdminClient({"bootstrap.servers": target.address})

    def followed():
        described = ConfigResource(ConfigResource.Type.TOPIC, "grows")
        configs = target_admin.describe_configs([described])[described].result(30)
        return configs["retention.ms"].value == "7200000" and configs["mirror.link"].value == "follow"
    wait_until(followed, what="the configs to follow")

    # DeleteRecords, transactions and new partitions are refused on a mirror topic.
    from kafka.admin import KafkaAdminClient
    from kafka.structs import TopicPartition as KafkaTopicPartition
    kafka_admin = KafkaAdminClient(bootstrap_servers=target.address)
    with pytest.raises(Exception):
        kafka_admin.delete_records({KafkaTopicPartition("grows", 0): 2})
    kafka_admin.close()
    with pytest.raises(KafkaException):
        target_admin.create_partitions([NewPartitions("grows", 5)])["grows"].result(30)
    transactional = Producer({"bootstrap.servers": target.address, "transactional.id": "m"})
    transactional.init_transactions(30)
    transactional.begin_transaction()
    transactional.produce("grows", value=b"no", partition=0)
    with pytest.raises(KafkaException):
        transactional.commit_transaction(30)
    assert records(target, "grows", 3) == records(source, "grows", 3)


@pytest.mark.skipif(CLUSTER == 1, reason="a leadership move needs a cluster")
def test_a_mirror_partition_whose_leader_dies_is_copied_on_by_its_next_leader(clusters):
    source, target = clusters
    create_topic(source, "moving", 3)
    produce(source, "moving", 30, 3)
    link(target, source, "moves", "--topics", "moving")
    wait_until(caught_up(source, target, "moving", 3))
    # A broker other than the one clients bootstrap from (the readers here need it).
    victim = next(node for node, port in enumerate(target.ports[:CLUSTER], start=1)
                  if port != target.port)
    target.kill9_node(victim)
    produce(source, "moving", 30, 3, prefix="after")
    wait_until(caught_up(source, target, "moving", 3), timeout=90,
               what="the next leaders to copy on")
    assert records(target, "moving", 3) == records(source, "moving", 3)
    target.start_node(victim)


@pytest.mark.skipif(CLUSTER > 1, reason="a TLS listener is tested on one broker")
def test_a_tls_source_is_trusted_through_its_ca_and_only_so():
    from conftest import server_certificate
    with tempfile.TemporaryDirectory() as source_dir, tempfile.TemporaryDirectory() as target_dir:
        ca, certificate, key = server_certificate(source_dir)
        tls = {"security.protocol": "SSL", "ssl.ca.location": ca}
        source = Broker(source_dir, settings=(
            "listeners=SSL://127.0.0.1:{port}", f"ssl.certificate.location={certificate}",
            f"ssl.key.location={key}"), client=tls).start()
        target = Broker(target_dir).start()
        try:
            admin = AdminClient({"bootstrap.servers": source.address, **tls})
            admin.create_topics([NewTopic("sealed", 1)])["sealed"].result(30)
            producer = Producer({"bootstrap.servers": source.address, **tls})
            for i in range(3):
                producer.produce("sealed", value=f"t{i}".encode())
            assert producer.flush(30) == 0
            # Without the CA, the source's certificate is not trusted.
            link(target, source, "untrusted", "--topics", "sealed",
                 "--source-config", "security.protocol=SSL")
            wait_until(lambda: describe(target, "untrusted")["state"] == "failed",
                       what="the TLS error")
            spool(target, "mirror", "delete", "untrusted")
            link(target, source, "trusted", "--topics", "sealed",
                 "--source-config", "security.protocol=SSL",
                 "--source-config", f"ssl.ca.location={ca}")
            assert describe(target, "trusted")["source_config"]["ssl.ca.pem"] == "(PEM)"
            # (Read only once the mirror topic is there: a reader's Metadata would
            # auto-create a plain topic of that name first.)
            wait_until(lambda: [p["mirror_end"] for p in describe(target, "trusted")["partitions"]]
                       == [3], what="the copy over TLS")
            assert [r[3] for r in kafka_python_records(target, "sealed", 1)] == \
                [b"t0", b"t1", b"t2"]
        finally:
            target.stop()
            source.stop()
