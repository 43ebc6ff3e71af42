"""Table topics (docs/tables.md) read by real engines: pyiceberg, through its SQL
catalogue pointed at the broker's metadata database, and DuckDB, reading the Parquet
files of the table's current snapshot. Records are produced with confluent-kafka
(librdkafka) and kafka-python; every committed record must be in the table exactly
once, with its partition, offset, timestamp, key, value and headers; aborted
transactions never; a kill -9 between commits repeats and loses nothing."""

import json
import os
import random
import tempfile
import time
import urllib.request
import uuid

import duckdb
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka import KafkaProducer
from kafka.admin import ConfigResource as KafkaConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient

from confluent_kafka.serialization import MessageField, SerializationContext

from conftest import BROKERS, CLUSTER, SPOOL_BIN, STORAGE, Broker, free_port, metadata_url
from iceberg_rest import RestCatalogue
from test_console import browser_page, shot  # noqa: F401

INTERVAL_MS = 1000


def file_io_properties():
    """What pyiceberg needs to read the tables' files (moto's S3 in s3 mode)."""
    if STORAGE != "s3":
        return {}
    return {
        "s3.endpoint": os.environ["AWS_ENDPOINT_URL"],
        "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
        "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"],
        "s3.region": os.environ.get("AWS_REGION", "us-east-1"),
    }


def catalog(broker):
    """pyiceberg's SQL catalogue on the broker's metadata database."""
    from pyiceberg.catalog.sql import SqlCatalog
    url = metadata_url(broker.data_dir)
    if url:
        uri = url.replace("postgres://", "postgresql+psycopg2://", 1)
    else:
        uri = f"sqlite:///{broker.data_dir}/data/metadata.db"
    return SqlCatalog("spool", uri=uri, **file_io_properties())


def create_table_topic(broker, topic, partitions=3, **configs):
    settings = {"table.enable": "true", "table.commit.interval.ms": str(INTERVAL_MS), **configs}
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic(topic, partitions, 1, config=settings)])[topic].result(15)


def table_rows(broker, topic):
    """The table's rows (pyiceberg's scan), sorted by partition and offset (a
    `registry` table's are in its `kafka` column)."""
    table = catalog(broker).load_table(("spool", topic))
    rows = table.scan().to_arrow().to_pylist()
    return sorted(rows, key=lambda row: (
        (row["partition"], row["offset"]) if "partition" in row
        else (row["kafka"]["partition"], row["kafka"]["offset"])))


def wait_for_rows(broker, topic, count, timeout=60):
    """The table's rows once it has `count` of them (or more: then the test fails on
    them)."""
    from pyiceberg.exceptions import NoSuchTableError
    deadline = time.time() + timeout
    rows = []
    while time.time() < deadline:
        try:
            rows = table_rows(broker, topic)
        except NoSuchTableError:
            rows = []
        if len(rows) >= count:
            return rows
        time.sleep(0.3)
    raise AssertionError(f"the table has {len(rows)} of {count} rows:\n{broker.log_tail()}")


def local_copies(broker, topic, directory):
    """The Parquet files of the table's current snapshot, copied into `directory`
    (DuckDB reads local files without extensions)."""
    table = catalog(broker).load_table(f"spool.{topic}")
    copies = []
    for index, path in enumerate(table.inspect.files().column("file_path").to_pylist()):
        copy = os.path.join(directory, f"{index}.parquet")
        with table.io.new_input(path).open() as source, open(copy, "wb") as target:
            target.write(source.read())
        copies.append(copy)
    return copies


def duckdb_rows(broker, topic):
    """The rows DuckDB reads from the Parquet files of the table's current snapshot."""
    with tempfile.TemporaryDirectory() as local:
        copies = local_copies(broker, topic, local)
        if not copies:
            return []
        return duckdb.connect().sql(
            f'SELECT "partition", "offset", key, value FROM read_parquet({copies!r}) '
            'ORDER BY "partition", "offset"').fetchall()


def table_info(broker, topic):
    with urllib.request.urlopen(f"{broker.admin_url}/api/topics/{topic}", timeout=10) as answer:
        return json.load(answer)["table"]


def test_every_committed_record_is_in_the_table_once_with_its_columns(broker, browser_page):
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    create_table_topic(broker, topic)
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 5})
    sent = {}
    # Delivery reports carry no headers: each record's are kept by key.
    headers_of = {}

    def delivered(error, message):
        assert error is None, error
        sent[(message.partition(), message.offset())] = (
            message.key(), message.value(), message.timestamp()[1],
            headers_of.get(message.key()))

    for i in range(300):
        value = json.dumps({"id": i, "amount": i * 10}).encode()
        headers = [("source", b"web"), ("n", str(i).encode())] if i % 3 else None
        headers_of[f"k{i}".encode()] = headers
        producer.produce(topic, key=f"k{i}".encode(), value=value, headers=headers,
                         on_delivery=delivered)
    producer.produce(topic, key=b"tombstone", value=None, on_delivery=delivered)
    assert producer.flush(20) == 0

    rows = wait_for_rows(broker, topic, len(sent))
    assert [(r["partition"], r["offset"]) for r in rows] == sorted(sent), "each once"
    for row in rows:
        key, value, timestamp_ms, headers = sent[(row["partition"], row["offset"])]
        assert row["key"] == key
        assert row["value"] == value
        assert int(row["timestamp"].timestamp() * 1000) == timestamp_ms
        assert [(h["key"], h["value"]) for h in row["headers"]] == (headers or [])
    assert len({r["partition"] for r in rows}) == 3

    assert duckdb_rows(broker, topic) == [
        (r["partition"], r["offset"], r["key"], r["value"]) for r in rows]

    # What the brokers report: no lag, every row written, one commit or more.
    deadline = time.time() + 10
    while True:
        info = table_info(broker, topic)
        if info["lag_records"] == 0 and info["rows_written"] == len(sent) or time.time() > deadline:
            break
        time.sleep(0.3)
    assert info["table"] == f"spool.{topic}"
    assert info["lag_records"] == 0, info
    assert info["rows_written"] == len(sent), info
    assert info["errors"] == 0, info["last_error"]
    assert info["commits"] >= 1
    assert sorted(p["partition"] for p in info["partitions"]) == [0, 1, 2]
    metrics = urllib.request.urlopen(f"{broker.admin_url}/metrics", timeout=10).read().decode()
    assert f'spool_table_lag_records{{topic="{topic}"}}' in metrics
    described = subprocess_run([SPOOL_BIN, "topic", "describe", topic, "--brokers", broker.address,
                                "--admin-url", broker.admin_url])
    assert f"spool.{topic}" in described and "TABLE-OFFSET" in described, described
    # The console's topic page shows the table.
    from playwright.sync_api import expect
    page = browser_page
    page.set_default_timeout(20000)
    page.goto(f"{broker.admin_url}/#/topics/{topic}")
    expect(page.locator("#table")).to_contain_text(f"spool.{topic}")
    expect(page.locator(".card", has_text="Rows")).to_contain_text(f"{len(sent):,}")
    shot(page, "table-topic")


def subprocess_run(args):
    import subprocess
    result = subprocess.run(args, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_aborted_transactions_never_reach_the_table(broker):
    topic = f"payments-{uuid.uuid4().hex[:6]}"
    create_table_topic(broker, topic, partitions=2)
    producer = Producer({"bootstrap.servers": broker.address,
                         "transactional.id": f"tx-{topic}"})
    producer.init_transactions(15)
    for outcome in ("commit", "abort", "commit"):
        producer.begin_transaction()
        for i in range(10):
            producer.produce(topic, key=f"{outcome}-{i}".encode(), value=outcome.encode(),
                             partition=i % 2)
        if outcome == "commit":
            producer.commit_transaction(15)
        else:
            producer.abort_transaction(15)
    rows = wait_for_rows(broker, topic, 20)
    time.sleep(2 * INTERVAL_MS / 1000)
    rows = table_rows(broker, topic)
    assert len(rows) == 20, rows
    assert {row["value"] for row in rows} == {b"commit"}
    assert len({(r["partition"], r["offset"]) for r in rows}) == 20
    # The markers' and the aborted records' offsets are passed over, not stuck on.
    info = table_info(broker, topic)
    assert info["lag_records"] == 0, info


def test_a_topic_made_a_table_later_backfills_from_the_log_start_kafka_python(broker):
    topic = f"clicks-{uuid.uuid4().hex[:6]}"
    admin = KafkaAdminClient(bootstrap_servers=broker.address)
    from kafka.admin import NewTopic as KafkaNewTopic
    admin.create_topics([KafkaNewTopic(topic, 2, 1)])
    producer = KafkaProducer(bootstrap_servers=broker.address)
    for i in range(50):
        producer.send(topic, key=f"k{i}".encode(), value=f"before-{i}".encode(),
                      headers=[("i", str(i).encode())])
    producer.flush(20)
    admin.alter_configs([KafkaConfigResource(
        ConfigResourceType.TOPIC, topic,
        configs={"table.enable": "true", "table.commit.interval.ms": str(INTERVAL_MS)})])
    for i in range(50):
        producer.send(topic, key=f"k{i}".encode(), value=f"after-{i}".encode())
    producer.flush(20)
    producer.close()
    rows = wait_for_rows(broker, topic, 100)
    assert len(rows) == 100
    values = sorted(row["value"].decode() for row in rows)
    assert values == sorted([f"before-{i}" for i in range(50)] + [f"after-{i}" for i in range(50)])
    assert len({(r["partition"], r["offset"]) for r in rows}) == 100
    before = [row for row in rows if row["value"].startswith(b"before-")]
    assert all(row["headers"] == [{"key": "i", "value": row["value"][7:]}] for row in before)
    admin.close()


def test_kill9_between_commits_repeats_nothing_and_loses_nothing():
    with tempfile.TemporaryDirectory() as data_dir:
        broker = Broker(data_dir).start()
        topic = f"ledger-{uuid.uuid4().hex[:6]}"
        create_table_topic(broker, topic, partitions=2, **{"table.commit.interval.ms": "1500"})
        acknowledged = set()

        def delivered(error, message):
            if error is None:
                acknowledged.add(message.value())

        sent = 0
        for _ in range(4):
            producer = Producer({"bootstrap.servers": broker.address, "acks": "all",
                                 "enable.idempotence": True, "linger.ms": 2})
            for _ in range(100):
                producer.produce(topic, value=f"r{sent}".encode(), on_delivery=delivered)
                sent += 1
            assert producer.flush(20) == 0
            # Somewhere in the commit interval: before, while or after files are
            # written and committed.
            time.sleep(random.uniform(0, 1.6))
            broker.kill9()
            broker.start()
        assert len(acknowledged) == sent
        rows = wait_for_rows(broker, topic, sent)
        time.sleep(2)
        rows = table_rows(broker, topic)
        values = [row["value"] for row in rows]
        assert len(values) == sent, f"{len(values)} rows for {sent} records"
        assert set(values) == acknowledged
        assert len({(r["partition"], r["offset"]) for r in rows}) == sent
        broker.stop()


ORDER_V1 = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"},
    {"name": "customer", "type": "string"},
    {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
        {"name": "city", "type": "string"}]}},
]})
# Compatible: a field added at the top and one in the nested record, with defaults.
ORDER_V2 = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"},
    {"name": "customer", "type": "string"},
    {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
        {"name": "city", "type": "string"},
        {"name": "zip", "type": ["null", "string"], "default": None}]}},
    {"name": "email", "type": ["null", "string"], "default": None},
]})


@pytest.mark.parametrize("login", ["token", "credential"])
def test_a_rest_catalogue_named_by_table_catalog_url_holds_the_tables(make_broker, login):
    """With `table.catalog.url`, the tables are in that Iceberg REST catalogue (logged
    in with a bearer token, or an OAuth2 client credential exchanged for one), not in
    the metadata store, and pyiceberg's REST client reads every record once."""
    from pyiceberg.catalog.rest import RestCatalog
    with tempfile.TemporaryDirectory() as directory:
        if STORAGE == "s3":
            warehouse = f"{os.environ['SPOOL_TEST_S3_URL'].rstrip('/')}/rest-{uuid.uuid4().hex}"
        else:
            warehouse = f"file://{directory}/warehouse"
        with RestCatalogue(directory, warehouse=warehouse, **file_io_properties()) as rest:
            rest.token = "spool-t0ken"
            rest.credential = ("spool", "s3cret")
            secret = os.path.join(directory, "secret")
            with open(secret, "w") as f:
                f.write((rest.token if login == "token" else "spool:s3cret") + "\n")
            broker = make_broker(f"table.catalog.url={rest.url}/",
                                 f"table.catalog.warehouse={warehouse}",
                                 f"table.catalog.{login}.file={secret}")
            topic = f"rest-{uuid.uuid4().hex[:8]}"
            create_table_topic(broker, topic, partitions=2)
            producer = Producer({"bootstrap.servers": broker.address})
            for i in range(200):
                producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
            assert producer.flush(20) == 0

            reader = RestCatalog("rest", uri=rest.url, token=rest.token, **file_io_properties())
            deadline = time.time() + 60
            rows = []
            while time.time() < deadline:
                if reader.table_exists(("spool", topic)):
                    rows = reader.load_table(("spool", topic)).scan().to_arrow().to_pylist()
                    if len(rows) >= 200:
                        break
                time.sleep(0.3)
            assert sorted((r["key"], r["value"]) for r in rows) == sorted(
                (f"k{i}".encode(), f"v{i}".encode()) for i in range(200)), (
                    rest.failures, broker.log_tail())
            assert len({(r["partition"], r["offset"]) for r in rows}) == 200, "each once"
            assert not rest.failures, rest.failures
            assert not catalog(broker).table_exists(("spool", topic)), "not in the SQL catalogue"
            assert ("POST", f"/v1/namespaces/spool/tables/{topic}") in rest.requests, "committed"
            assert (login == "credential") == (("POST", "/v1/oauth/tokens") in rest.requests)
            assert all(path.startswith(warehouse) for path in
                       reader.load_table(("spool", topic)).inspect.files()
                       .column("file_path").to_pylist())


@pytest.fixture(scope="module")
def registry_broker():
    """A broker (or cluster) serving the schema registry on every member."""
    ports = [free_port() for _ in range(BROKERS)]
    with tempfile.TemporaryDirectory() as data_dir:
        started = Broker(data_dir, node_args=lambda node: [
            "--set", f"schema.registry.listen=127.0.0.1:{ports[node - 1]}"]).start()
        started.registry_url = f"http://127.0.0.1:{ports[0]}"
        yield started
        started.stop()


def produce_serialized(broker, topic, serialize, values):
    producer = Producer({"bootstrap.servers": broker.address})
    for value in values:
        producer.produce(topic, key=str(value.get("id", "")).encode(),
                         value=serialize(value, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(20) == 0


def produce_raw(broker, topic, values):
    producer = Producer({"bootstrap.servers": broker.address})
    for value in values:
        producer.produce(topic, value=value)
    assert producer.flush(20) == 0


def test_avro_fields_are_typed_columns_a_new_version_adds_some_and_misfits_are_dead_letters(
        registry_broker):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    broker = registry_broker
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    create_table_topic(broker, topic, partitions=2, **{"table.schema": "registry"})
    client = SchemaRegistryClient({"url": broker.registry_url})
    v1 = [{"id": i, "customer": f"c{i}", "address": {"city": "Oslo"}} for i in range(20)]
    produce_serialized(broker, topic, AvroSerializer(client, ORDER_V1), v1)
    # Values the table cannot take: no schema id, and an id no schema has.
    produce_raw(broker, topic, [b"plain text", b"\x00\x00\x0f\x42\x40garbage"])
    rows = wait_for_rows(broker, topic, 20)
    assert sorted(row["id"] for row in rows) == list(range(20))
    assert all(row["customer"] == f"c{row['id']}" for row in rows)
    assert all(row["address"]["city"] == "Oslo" for row in rows)
    assert len({(r["kafka"]["partition"], r["kafka"]["offset"]) for r in rows}) == 20

    v2 = [{"id": 100 + i, "customer": "d", "address": {"city": "Lima", "zip": "15001"},
           "email": f"u{i}@example.com"} for i in range(10)]
    produce_serialized(broker, topic, AvroSerializer(client, ORDER_V2), v2)
    rows = wait_for_rows(broker, topic, 30)
    assert len(rows) == 30
    newer = [row for row in rows if row["id"] >= 100]
    assert sorted(row["email"] for row in newer) == sorted(v["email"] for v in v2)
    assert all(row["address"]["zip"] == "15001" for row in newer)
    older = [row for row in rows if row["id"] < 100]
    assert all(row["email"] is None and row["address"]["zip"] is None for row in older)

    letters = wait_for_rows(broker, f"{topic}_dead_letters", 2)
    assert sorted(letter["value"] for letter in letters) == sorted(
        [b"plain text", b"\x00\x00\x0f\x42\x40garbage"])
    reasons = " | ".join(letter["reason"] for letter in letters)
    assert "schema id" in reasons and "1000000" in reasons, reasons
    # Waiting for the subject's first schema, and dead letters, are no errors.
    info = table_info(broker, topic)
    assert info["errors"] == 0, info["last_error"]

    # DuckDB reads the typed columns from the table's files.
    table = catalog(broker).load_table(f"spool.{topic}")
    assert {"kafka", "id", "customer", "address", "email"} <= {
        field.name for field in table.schema().fields}


def test_json_schema_properties_are_typed_columns(registry_broker):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    broker = registry_broker
    topic = f"stock-{uuid.uuid4().hex[:6]}"
    create_table_topic(broker, topic, partitions=1, **{"table.schema": "registry"})
    schema = json.dumps({
        "type": "object", "title": "Stock",
        "properties": {"id": {"type": "integer"}, "sku": {"type": "string"},
                       "price": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["id", "sku"]})
    client = SchemaRegistryClient({"url": broker.registry_url})
    serialize = JSONSerializer(schema, client)
    items = [{"id": i, "sku": f"s-{i}", "price": i * 1.5, "tags": ["a"] * (i % 3)} for i in range(15)]
    produce_serialized(broker, topic, serialize, items)
    # The registered id, a value of the wrong type (the serializer would refuse it).
    schema_id = client.get_latest_version(f"{topic}-value").schema_id
    produce_raw(broker, topic, [b"\x00" + schema_id.to_bytes(4, "big") + b'{"id": "seven"}'])
    rows = wait_for_rows(broker, topic, 15)
    assert sorted((r["id"], r["sku"], r["price"], r["tags"]) for r in rows) == sorted(
        (i["id"], i["sku"], i["price"], i["tags"]) for i in items)
    letters = wait_for_rows(broker, f"{topic}_dead_letters", 1)
    assert "id" in letters[0]["reason"], letters[0]["reason"]
    assert duckdb_columns(broker, topic, '"id", sku, price') == sorted(
        (i["id"], i["sku"], i["price"]) for i in items)


def duckdb_columns(broker, topic, columns):
    """`columns` of the table's current files, read by DuckDB, sorted."""
    with tempfile.TemporaryDirectory() as local:
        copies = local_copies(broker, topic, local)
        return sorted(duckdb.connect().sql(
            f"SELECT {columns} FROM read_parquet({copies!r}, union_by_name=true)").fetchall())


def test_the_benchmark_script_runs_small():
    """scripts/bench-tables, small: every measure is printed."""
    import subprocess
    import sys
    done = subprocess.run(
        [sys.executable, os.path.join(os.path.dirname(__file__), "..", "scripts", "bench-tables"),
         "--rounds", "1", "--produce-seconds", "2", "--seconds", "3", "--rate-mb", "1",
         "--interval-ms", "1000", "--records", "2000"],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, SPOOL_BIN=os.path.abspath(SPOOL_BIN)))
    assert done.returncode == 0, done.stderr
    for said in ("rows per second, one core", "produce records/s", "steady lag"):
        assert said in done.stdout, done.stdout
