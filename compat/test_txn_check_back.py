"""Check-back of open transactions (RocketMQ's transactional messages on Kafka's
transactions): a transactional producer writes, then dies (kill -9) or stalls before
`commit_transaction`; when the transaction's timeout passes, or a new producer of its
id initializes, the coordinator asks the application's checker (an HTTP server here)
and commits or aborts as it answers. Producers: confluent-kafka (librdkafka) and
kafka-python, each in a child process; readers: read_committed consumers of both."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import CLUSTER, SPOOL_BIN, free_port, server_certificate
from test_admin_http import samples, value
from test_transactions import coordinator_node, kafka_python_values

# Timeouts as short as tests want them: the sweep looks every 200 ms, an UNKNOWN
# answer is asked again after 500 ms, three times at most.
SETTINGS = ("transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
            "transaction.check.interval.ms=500", "transaction.check.max.attempts=3")
TIMEOUT_MS = 3000

CONFLUENT = r'''
import sys
from confluent_kafka import Producer
bootstrap, txn_id, topic, count, timeout_ms = sys.argv[1:6]
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
              "transaction.timeout.ms": int(timeout_ms)})
p.init_transactions(30)
p.begin_transaction()
for i in range(int(count)):
    p.produce(topic, key=f"order-{i}".encode(), value=f"{txn_id}-{i}".encode(),
              headers=[("order-id", str(i).encode())], partition=i % 2)
p.flush(30)
print("written", flush=True)
sys.stdin.readline()
try:
    p.commit_transaction(30)
    print("committed", flush=True)
except Exception as error:
    print("refused", error, flush=True)
'''

KAFKA_PYTHON = r'''
import sys
from kafka import KafkaProducer
bootstrap, txn_id, topic, count, timeout_ms = sys.argv[1:6]
p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id,
                  transaction_timeout_ms=int(timeout_ms))
p.init_transactions()
p.begin_transaction()
for i in range(int(count)):
    p.send(topic, key=f"order-{i}".encode(), value=f"{txn_id}-{i}".encode(),
           headers=[("order-id", str(i).encode())], partition=i % 2)
p.flush()
print("written", flush=True)
sys.stdin.readline()
try:
    p.commit_transaction()
    print("committed", flush=True)
except Exception as error:
    print("refused", error, flush=True)
'''


class Checker:
    """The application's checker: answers each transactional id from a script (the
    last answer repeats) and keeps every check it was sent."""

    def __init__(self, certificate=None):
        self.answers = {}
        self.checks = []
        checker = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                body["authorization"] = self.headers.get("Authorization")
                checker.checks.append(body)
                script = checker.answers.get(body["transactional_id"], ["UNKNOWN"])
                answer = script.pop(0) if len(script) > 1 else script[0]
                # Text and JSON answers by turns.
                reply = (answer if body["attempt"] % 2 else
                         json.dumps({"decision": answer})).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        scheme = "http"
        if certificate:  # (certificate, key) paths: served over TLS
            import ssl
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*certificate)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}/check"

    def checks_of(self, transactional_id):
        return [c for c in self.checks if c["transactional_id"] == transactional_id]

    def stop(self):
        self.server.shutdown()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from conftest import Broker
    checker = Checker()
    broker = Broker(str(tmp_path_factory.mktemp("check-back")), SETTINGS).start()
    spool(broker, "add", "orders-", "--url", checker.url, "--header", "Authorization=Bearer s3cret")
    spool(broker, "add", "down-", "--url", f"http://127.0.0.1:{free_port()}/gone",
          "--timeout-ms", "300")
    admin = AdminClient({"bootstrap.servers": broker.address})
    for future in admin.create_topics([NewTopic("orders", 2, 1)]).values():
        future.result(15)
    yield broker, checker
    broker.stop()
    checker.stop()


def spool(broker, *args, check=True):
    done = subprocess.run([SPOOL_BIN, "txn-checker", *args, "--brokers", broker.address,
                           "--admin-url", broker.admin_url], capture_output=True, timeout=30)
    if check:
        assert done.returncode == 0, done.stderr.decode()
    return done


def start_producer(broker, client, transactional_id, count=4, timeout_ms=TIMEOUT_MS):
    """A child process that writes `count` records in a transaction and waits."""
    script = CONFLUENT if client == "confluent" else KAFKA_PYTHON
    child = subprocess.Popen(
        [sys.executable, "-c", script, broker.address, transactional_id, "orders", str(count),
         str(timeout_ms)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = child.stdout.readline()
    assert line.strip() == b"written", child.stderr.read().decode()
    return child


def kill9(child):
    child.send_signal(signal.SIGKILL)
    child.wait()


def committed_snapshot(broker):
    """Every value of `orders` a read_committed librdkafka consumer reads up to the
    end of both partitions (their last stable offsets)."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": ",".join(broker.addresses), "group.id": "snapshot",
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("orders", p, 0) for p in range(2)])
    values, at_end = [], set()
    deadline = time.time() + 20
    while len(at_end) < 2 and time.time() < deadline:
        message = consumer.poll(0.2)
        if message is None:
            continue
        if message.error():
            at_end.add(message.partition())
            continue
        values.append(message.value().decode())
    consumer.close()
    return values


def committed_values(broker, transactional_id, expected, timeout=30):
    """The transaction's values read_committed readers see, once `expected` of them
    are there or the timeout passed (the topic holds other tests' values too)."""
    deadline = time.time() + timeout
    while True:
        values = sorted(v for v in committed_snapshot(broker)
                        if v.startswith(transactional_id + "-"))
        if len(values) >= expected or time.time() > deadline:
            return values
        time.sleep(0.3)


def wait_for(predicate, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_a_dead_producers_transaction_commits_when_the_checker_says_commit(setup, client):
    broker, checker = setup
    txn = f"orders-{client}-{uuid.uuid4().hex[:6]}"
    checker.answers[txn] = ["COMMIT"]
    kill9(start_producer(broker, client, txn))
    assert wait_for(lambda: checker.checks_of(txn)), "the checker was never asked"
    values = committed_values(broker, txn, 4)
    assert values == [f"{txn}-{i}" for i in range(4)]
    assert kafka_python_values(broker.address, "orders", "read_committed").count(f"{txn}-0") == 1
    check = checker.checks_of(txn)[0]
    assert check["authorization"] == "Bearer s3cret"
    assert check["attempt"] == 1 and check["timeout_ms"] == TIMEOUT_MS
    # In a cluster, partitions other brokers lead are read from the catalogue and objects.
    firsts = sorted((p["partition"], p["key"], p["headers"][0]["value"])
                    for p in check["partitions"])
    assert firsts == [(0, "order-0", "0"), (1, "order-1", "1")], check
    assert {p["topic"] for p in check["partitions"]} == {"orders"}


def test_a_rolled_back_transaction_is_never_seen(setup):
    broker, checker = setup
    txn = f"orders-rb-{uuid.uuid4().hex[:6]}"
    checker.answers[txn] = ["ROLLBACK"]
    kill9(start_producer(broker, "confluent", txn))
    assert wait_for(lambda: checker.checks_of(txn))
    time.sleep(1)
    assert committed_values(broker, txn, 0) == []
    assert not [v for v in kafka_python_values(broker.address, "orders", "read_committed")
                if v.startswith(txn)]


def test_unknown_answers_are_asked_again_until_commit(setup):
    broker, checker = setup
    txn = f"orders-unk-{uuid.uuid4().hex[:6]}"
    checker.answers[txn] = ["UNKNOWN", "UNKNOWN", "COMMIT"]
    kill9(start_producer(broker, "confluent", txn))
    assert committed_values(broker, txn, 4) == [f"{txn}-{i}" for i in range(4)]
    attempts = [c["attempt"] for c in checker.checks_of(txn)]
    assert attempts == [1, 2, 3], attempts


def test_a_checker_that_is_down_leads_to_abort_after_the_attempts(setup):
    broker, _ = setup
    before = value(samples(broker), "spool_transaction_checks_total", answer="none")
    txn = f"down-{uuid.uuid4().hex[:6]}"
    kill9(start_producer(broker, "confluent", txn))
    assert wait_for(lambda: value(samples(broker), "spool_transaction_checks_total",
                                  answer="none") >= before + 3, timeout=30)
    # Aborted: a new producer of the id starts at once, and nothing was committed.
    child = start_producer(broker, "confluent", txn, count=1)
    child.stdin.write(b"go\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == b"committed"
    child.wait(30)
    assert committed_values(broker, txn, 1) == [f"{txn}-0"]


def test_a_new_producer_of_the_id_has_the_open_transaction_checked_at_once(setup):
    broker, checker = setup
    txn = f"orders-new-{uuid.uuid4().hex[:6]}"
    checker.answers[txn] = ["COMMIT"]
    # A timeout of a minute: only the new producer can bring the check on.
    kill9(start_producer(broker, "confluent", txn, timeout_ms=60000))
    started = time.time()
    child = start_producer(broker, "kafka-python", txn, count=1, timeout_ms=60000)
    assert time.time() - started < 20
    assert len(checker.checks_of(txn)) == 1
    child.stdin.write(b"go\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == b"committed"
    child.wait(30)
    values = committed_values(broker, txn, 5)
    assert values == sorted([f"{txn}-{i}" for i in range(4)] + [f"{txn}-0"])


def test_a_producer_that_stalled_past_a_checked_commit_is_fenced(setup):
    broker, checker = setup
    txn = f"orders-stall-{uuid.uuid4().hex[:6]}"
    checker.answers[txn] = ["COMMIT"]
    child = start_producer(broker, "confluent", txn)
    child.send_signal(signal.SIGSTOP)
    try:
        assert committed_values(broker, txn, 4) == [f"{txn}-{i}" for i in range(4)]
    finally:
        child.send_signal(signal.SIGCONT)
    child.stdin.write(b"go\n")
    child.stdin.flush()
    outcome = child.stdout.readline().decode()
    child.wait(30)
    assert outcome.startswith("refused"), outcome


def test_an_https_checker_is_trusted_through_its_ca_and_only_so(setup, tmp_path):
    broker, _ = setup
    ca, certificate, key = server_certificate(str(tmp_path))
    secure = Checker(certificate=(certificate, key))
    try:
        spool(broker, "add", "tls-trusted-", "--url", secure.url, "--ca-location", ca)
        spool(broker, "add", "tls-unknown-", "--url", secure.url)
        trusted = f"tls-trusted-{uuid.uuid4().hex[:6]}"
        unknown = f"tls-unknown-{uuid.uuid4().hex[:6]}"
        secure.answers[trusted] = ["COMMIT"]
        secure.answers[unknown] = ["COMMIT"]
        before = value(samples(broker), "spool_transaction_checks_total", answer="none")
        kill9(start_producer(broker, "confluent", trusted))
        kill9(start_producer(broker, "confluent", unknown))
        assert committed_values(broker, trusted, 4) == [f"{trusted}-{i}" for i in range(4)]
        # The other endpoint's certificate chains to no root the broker trusts: no
        # answer, three times, then the transaction is aborted.
        assert wait_for(lambda: value(samples(broker), "spool_transaction_checks_total",
                                      answer="none") >= before + 3, timeout=30)
        assert secure.checks_of(unknown) == []
        assert committed_values(broker, unknown, 0) == []
    finally:
        spool(broker, "remove", "tls-trusted-", check=False)
        spool(broker, "remove", "tls-unknown-", check=False)
        secure.stop()


@pytest.mark.skipif(CLUSTER == 1, reason="a coordinator move needs a cluster")
def test_the_next_coordinator_checks_when_the_coordinators_broker_dies(setup):
    broker, checker = setup
    txn = f"orders-move-{uuid.uuid4().hex[:6]}"
    checker.answers[txn] = ["COMMIT"]
    child = start_producer(broker, "confluent", txn)
    node = coordinator_node(broker.address, txn)
    kill9(child)
    broker.kill9_node(node)
    try:
        values = committed_values(broker, txn, 4, timeout=60)
    finally:
        broker.start_node(node)
    assert values == [f"{txn}-{i}" for i in range(4)]
    assert checker.checks_of(txn), "committed without a check"


def test_the_cli_lists_and_removes_checkers_and_refuses_bad_ones(setup):
    broker, _ = setup
    listed = json.loads(spool(broker, "list", "--format", "json").stdout)
    orders = next(c for c in listed if c["prefix"] == "orders-")
    assert orders["header_names"] == ["Authorization"] and "s3cret" not in json.dumps(listed)
    bad = spool(broker, "add", "x-", "--url", "ftp://nowhere", check=False)
    assert bad.returncode != 0 and b"http" in bad.stderr
    spool(broker, "add", "tmp/", "--url", "http://127.0.0.1:1/x")
    spool(broker, "remove", "tmp/")
    missing = spool(broker, "remove", "tmp/", check=False)
    assert missing.returncode != 0 and b"no transaction checker" in missing.stderr
    assert "tmp/" not in [c["prefix"] for c in
                          json.loads(spool(broker, "list", "--format", "json").stdout)]
