"""Real-client tests: each starts the spool binary on a free port with its own data
directory, drives it with kcat, confluent-kafka (librdkafka) and kafka-python, and
stops it."""

import os
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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    def __init__(self, data_dir, settings=(), args=(), env=None):
        self.data_dir = data_dir
        self.port = free_port()
        self.settings = list(settings)
        self.extra_args = list(args)
        self.env = dict(os.environ, **(env or {}))
        self.process = None
        self.log = open(os.path.join(data_dir, "broker.log"), "ab")

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        args = [SPOOL_BIN, "--listen", self.address, "--data-dir", os.path.join(self.data_dir, "data")]
        url = metadata_url(self.data_dir)
        if url:
            args += ["--metadata-url", url]
        storage = storage_url(self.data_dir)
        if storage:
            args += ["--storage-url", storage]
        for setting in self.settings:
            args += ["--set", setting]
        args += self.extra_args
        self.process = subprocess.Popen(args, stdout=self.log, stderr=self.log, env=self.env)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"spool exited with {self.process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("spool did not start listening")

    def kill9(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            assert self.process.returncode == 0, f"unclean shutdown: {self.process.returncode}"


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
        def make(*settings, args=(), env=None):
            b = Broker(data_dir, settings, args, env).start()
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


def kcat(*args, input=None, timeout=30):
    result = subprocess.run(["kcat", *args], input=input, capture_output=True, timeout=timeout)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout
