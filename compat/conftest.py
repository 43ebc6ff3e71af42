"""Real-client tests: each starts the spool binary on a free port with its own data
directory, drives it with kcat, confluent-kafka (librdkafka) and kafka-python, and
stops it."""

import itertools
import logging
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
import uuid

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

# kafka-python gives its version probe 2 s by default and reports NoBrokersAvailable
# when it is slower; on a busy 2-core machine (CI runs the fuzzers and the brokers of
# other suites on the same cores) it sometimes is. The probe's speed is not what
# these tests check: give every kafka-python client 15 s.
for _client in (KafkaAdminClient, KafkaConsumer, KafkaProducer):
    _client.DEFAULT_CONFIG["api_version_auto_timeout_ms"] = 15000

SPOOL_BIN = os.environ.get("SPOOL_BIN", "target/debug/spool")
# "postgres" runs every broker on a database of its own on the server that
# SPOOL_TEST_POSTGRES_URL names (scripts/test starts one); "sqlite" (the default) keeps
# the metadata in the data directory.
METADATA = os.environ.get("SPOOL_COMPAT_METADATA", "sqlite")
# "s3" keeps partition data in the S3 bucket that SPOOL_TEST_S3_URL names (moto's
# server, started by scripts/test), under a prefix of its own per data directory;
# "local" (the default) keeps it in the data directory.
STORAGE = os.environ.get("SPOOL_COMPAT_STORAGE", "local")
# With s3 storage, "3" runs every broker as a cluster of that many spool processes
# (node ids 1, 2, 3) sharing the metadata store and the bucket prefix, each with its
# own data directory. Clients bootstrap from one of them, a different one for each
# Broker made, and must find partition leaders and group coordinators from there.
CLUSTER = int(os.environ.get("SPOOL_COMPAT_CLUSTER", "1")) if STORAGE == "s3" else 1
# With a cluster, SPOOL_COMPAT_READERS=N adds N reader brokers (`broker.roles=reader`:
# they lead nothing and serve reads and Metadata), node ids after the writers', so
# that every test also runs with a reader in the cluster, and the clients of one
# test in every CLUSTER + N bootstrap from a reader.
READERS = int(os.environ.get("SPOOL_COMPAT_READERS", "0")) if CLUSTER > 1 else 0
# Every broker process of a test's cluster.
BROKERS = CLUSTER + READERS
_brokers_made = itertools.count()


def remembered(data_dir, name, make):
    """A value made once per data directory and kept there, for restarts."""
    path = os.path.join(data_dir, name)
    if os.path.exists(path):
        with open(path) as f:
            return f.read()
    value = make()
    with open(path, "w") as f:
        f.write(value)
    return value


def storage_url(data_dir):
    """The storage URL of the brokers of a data directory: a fresh prefix in the
    test bucket the first time."""
    if STORAGE != "s3":
        return None
    bucket = os.environ["SPOOL_TEST_S3_URL"].rstrip("/")
    return remembered(data_dir, "storage-url", lambda: f"{bucket}/compat-{uuid.uuid4().hex}")


def metadata_url(data_dir):
    """The metadata URL of the brokers of a data directory: a fresh PostgreSQL
    database the first time, remembered in the directory for restarts."""
    if METADATA != "postgres":
        return None
    server = os.environ["SPOOL_TEST_POSTGRES_URL"]

    def fresh_database():
        name = "compat_" + uuid.uuid4().hex
        subprocess.run(["psql", server, "-qAtc", f"CREATE DATABASE {name}"], check=True)
        return f"{server.rsplit('/', 1)[0]}/{name}"

    return remembered(data_dir, "metadata-url", fresh_database)


# Ports for brokers come from below the kernel's ephemeral range (32768 and up on
# Linux), where no client's outgoing connection takes them between our check and the
# broker's bind, and each pytest worker has a block of its own ("gw0", "gw1", ...), so
# two workers never pick the same one (ten workers fit below 30000; the KafkaJS suite,
# run alongside, takes its ports from 30000 up). A port is handed out once per worker: a killed
# broker restarts on its port, and no other broker of this worker may have taken it.
PORTS_PER_WORKER = 1000
_worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
_port_block = range(20000 + _worker * PORTS_PER_WORKER, 20000 + (_worker + 1) * PORTS_PER_WORKER)
_ports_handed_out = set()


def free_port():
    for port in random.sample(_port_block, len(_port_block)):
        if port in _ports_handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _ports_handed_out.add(port)
        return port
    raise RuntimeError(f"no free port left in {_port_block}")


class Broker:
    """The broker of a test: one spool process, or CLUSTER writers and READERS readers
    (or `count` brokers, for a test that needs a cluster of its own shape in
    shared-storage mode)."""

    def __init__(self, data_dir, settings=(), args=(), env=None, node_args=None, client=None,
                 count=None):
        self.data_dir = data_dir
        # What a client needs besides the address (SASL settings, say).
        self.client = dict(client or {})
        self.count = count or BROKERS
        # Node ids above this one are readers.
        self.writers = count or CLUSTER
        self.ports = [free_port() for _ in range(self.count)]
        # Each broker's HTTP admin listener (health, /metrics, REST API, console).
        self.admin_ports = [free_port() for _ in range(self.count)]
        # The broker clients bootstrap from.
        self.port = self.ports[next(_brokers_made) % self.count]
        self.settings = list(settings)
        self.extra_args = list(args)
        # node id -> arguments for that broker alone (say, its --advertise).
        self.node_args = node_args or (lambda node: [])
        self.env = dict(os.environ, **(env or {}))
        self.processes = []
        self.log = open(os.path.join(data_dir, "broker.log"), "ab")

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    @property
    def addresses(self):
        """Every broker's address, by node id."""
        return [f"127.0.0.1:{port}" for port in self.ports]

    @property
    def admin_url(self):
        """The admin listener of the broker clients bootstrap from."""
        return self.admin_url_of(self.ports.index(self.port) + 1)

    def admin_url_of(self, node):
        """The admin listener of broker `node` (node ids count from 1)."""
        return f"http://127.0.0.1:{self.admin_ports[node - 1]}"

    @property
    def admin_urls(self):
        return [self.admin_url_of(node) for node in range(1, len(self.ports) + 1)]

    @property
    def node_ids(self):
        """Every broker's node id, as BROKER config resources name them."""
        return [str(node) for node in range(1, len(self.ports) + 1)]

    def _args(self, node, port):
        data = os.path.join(self.data_dir, "data" if node == 1 else f"data-{node}")
        args = [SPOOL_BIN, "--listen", f"127.0.0.1:{port}", "--data-dir", data,
                "--admin-listen", f"127.0.0.1:{self.admin_ports[node - 1]}"]
        if self.count > 1:
            args += ["--node-id", str(node)]
        if node > self.writers:
            args += ["--set", "broker.roles=reader"]
        url = metadata_url(self.data_dir)
        if url:
            args += ["--metadata-url", url]
        storage = storage_url(self.data_dir)
        if storage:
            args += ["--storage-url", storage]
        # "{port}" in a setting stands for this broker's Kafka port.
        for setting in self.settings:
            args += ["--set", setting.replace("{port}", str(port))]
        return args + self.extra_args + list(self.node_args(node))

    def start(self):
        self.processes = [
            subprocess.Popen(self._args(node, port), stdout=self.log, stderr=self.log, env=self.env)
            for node, port in enumerate(self.ports, start=1)
        ]
        for process, port in zip(self.processes, self.ports):
            deadline = time.time() + 20
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"spool exited with {process.returncode}:\n{self.log_tail()}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if time.time() > deadline:
                        raise RuntimeError(f"spool did not start listening:\n{self.log_tail()}")
                    time.sleep(0.05)
        for node in range(1, len(self.ports) + 1):
            self.wait_until_ready(node)
        if self.count > 1:
            self._wait_for_members()
        return self

    def log_tail(self, lines=30):
        """The end of the brokers' shared log, for a failure's message."""
        self.log.flush()
        with open(self.log.name, "rb") as f:
            return b"".join(f.readlines()[-lines:]).decode(errors="replace")

    def wait_until_ready(self, node):
        """Until broker `node` says it is ready (/health/ready): its Kafka listener
        accepts connections a moment before the broker has finished starting."""
        import urllib.error
        import urllib.request
        deadline = time.time() + 20
        while True:
            try:
                with urllib.request.urlopen(self.admin_url_of(node) + "/health/ready", timeout=2):
                    return
            except (urllib.error.URLError, OSError):
                if time.time() > deadline:
                    raise RuntimeError(f"broker {node} did not become ready:\n{self.log_tail()}")
                time.sleep(0.05)

    def _wait_for_members(self):
        """Until every broker lists all of them: a topic made next is spread over
        them all."""
        from confluent_kafka.admin import AdminClient
        deadline = time.time() + 20
        for port in self.ports:
            admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", **self.client})
            while len(admin.list_topics(timeout=10).brokers) < self.count:
                if time.time() > deadline:
                    raise RuntimeError("the brokers did not form one cluster")
                time.sleep(0.05)

    def kill9(self):
        for process in self.processes:
            process.send_signal(signal.SIGKILL)
            process.wait()

    def kill9_node(self, node):
        """Kills one broker of a cluster (node ids count from 1)."""
        process = self.processes[node - 1]
        process.send_signal(signal.SIGKILL)
        process.wait()

    def start_node(self, node):
        """Starts one broker of a cluster again, on its port and data directory."""
        port = self.ports[node - 1]
        self.processes[node - 1] = subprocess.Popen(
            self._args(node, port), stdout=self.log, stderr=self.log, env=self.env)
        deadline = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError(f"spool did not start listening:\n{self.log_tail()}")
                time.sleep(0.05)
        self.wait_until_ready(node)

    def stop(self):
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            assert process.returncode == 0, f"unclean shutdown: {process.returncode}"


@pytest.fixture
def broker():
    with tempfile.TemporaryDirectory() as data_dir:
        b = Broker(data_dir).start()
        yield b
        b.stop()


@pytest.fixture
def make_broker():
    """Starts brokers with settings; all are stopped at the end."""
    started = []
    with tempfile.TemporaryDirectory() as data_dir:
        def make(*settings, args=(), env=None, node_args=None, client=None, count=None):
            b = Broker(data_dir, settings, args, env, node_args, client, count).start()
            started.append(b)
            return b
        yield make
        for b in started:
            b.stop()


def topic_dir(broker, topic):
    """A topic's data directory: topics/<topic id as 32 hex digits>."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": broker.address})
    topic_id = admin.describe_topics(TopicCollection([topic]))[topic].result(10).topic_id
    high = topic_id.get_most_significant_bits() & (2**64 - 1)
    low = topic_id.get_least_significant_bits() & (2**64 - 1)
    return os.path.join(broker.data_dir, "data", "topics", f"{high:016x}{low:016x}")


def server_certificate(directory):
    """A CA made for this run (trustme) and a server certificate it signs for
    127.0.0.1 and localhost, written to `directory`: (CA, certificate, key) paths."""
    import trustme
    ca = trustme.CA()
    paths = tuple(os.path.join(directory, name) for name in ("ca.pem", "server.pem", "server.key"))
    ca.cert_pem.write_to_path(paths[0])
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert.cert_chain_pems[0].write_to_path(paths[1])
    cert.private_key_pem.write_to_path(paths[2])
    return paths


def roundtrip(config, count=20, ready=lambda client: client):
    """With confluent-kafka on `config`: creates a topic of one partition, produces
    `count` records and reads them back in a group of its own; the topic. `ready` is
    given each admin client and producer as it is made (to serve `oauth_cb`, say)."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    topic = f"rt-{uuid.uuid4().hex[:8]}"
    admin = ready(AdminClient(config))  # kept: a collected client fails its futures
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    producer = ready(Producer(config))
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode())
    assert producer.flush(20) == 0
    consumer = Consumer({**config, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    deadline = time.time() + 30
    while len(got) < count and time.time() < deadline:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            got.append(message.value().decode())
    consumer.close()
    assert got == [f"v{i}" for i in range(count)]
    return topic


def kafka_python_roundtrip(settings, topic, count=10):
    """With kafka-python on `settings`: produces `count` records to `topic` (of one
    partition) and reads them back."""
    producer = KafkaProducer(**settings)
    for i in range(count):
        producer.send(topic, f"k{i}".encode())
    producer.flush(20)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=5000,
                             **settings)
    assert [m.value.decode() for m in consumer] == [f"k{i}" for i in range(count)]
    consumer.close()


def kcat(*args, input=None, timeout=30):
    result = subprocess.run(["kcat", *args], input=input, capture_output=True, timeout=timeout)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


class ClientLines(logging.Handler):
    """The log lines of a librdkafka client (its `logger`)."""

    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())

    def any_has(self, text):
        """Whether a line holds `text` (case-insensitive)."""
        return any(text.lower() in line.lower() for line in self.lines)


def client_logger(name):
    """A logger for a librdkafka client's `logger` setting, and its lines: each
    call's own, whatever `name`."""
    lines = ClientLines()
    logger = logging.getLogger(f"{name}-{uuid.uuid4().hex}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(lines)
    return logger, lines
