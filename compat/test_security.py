"""Security with real clients: one broker with PLAINTEXT, SASL_PLAINTEXT, SSL and
SASL_SSL listeners (certificates made by trustme for this run), a SCRAM user seeded
with `--bootstrap-user`. confluent-kafka (librdkafka), kafka-python and kcat produce
and consume over each protocol and SASL mechanism; a wrong password fails the client's
login; Metadata names the endpoint of the listener asked; a renewed certificate is
picked up without a restart; the CLI's admin commands speak TLS and SCRAM. One broker: a cluster's listeners are in
test_cluster_listeners.py."""

import json
import os
import socket
import subprocess
import tempfile
import time
import uuid

import pytest
import trustme
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import CLUSTER, SPOOL_BIN, free_port, kafka_python_roundtrip, kcat, roundtrip

USER, PASSWORD = "alice", "alice-secret"

pytestmark = pytest.mark.skipif(CLUSTER > 1, reason="listeners are tested on one broker")


class SecuredBroker:
    def __init__(self, tmp):
        self.tmp = tmp
        self.ca = trustme.CA()
        self.ca_path = os.path.join(tmp, "ca.pem")
        self.ca.cert_pem.write_to_path(self.ca_path)
        self.cert_path = os.path.join(tmp, "server.pem")
        self.key_path = os.path.join(tmp, "server.key")
        self.issue("127.0.0.1", "localhost")
        self.ports = {name: free_port() for name in ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")}
        listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in self.ports.items())
        self.process = subprocess.Popen(
            [SPOOL_BIN, "--data-dir", os.path.join(tmp, "data"), "--admin-listen", "off",
             "--bootstrap-user", f"{USER}:{PASSWORD}",
             "--set", f"listeners={listeners}",
             "--set", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
             "--set", f"ssl.certificate.location={self.cert_path}",
             "--set", f"ssl.key.location={self.key_path}"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "broker.log"), "w"))
        deadline = time.time() + 30
        for port in self.ports.values():
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.time() < deadline, "the broker did not start"
                    time.sleep(0.05)

    def issue(self, *names):
        """A server certificate for `names`, written over the broker's files."""
        cert = self.ca.issue_cert(*names)
        cert.private_key_pem.write_to_path(self.key_path + ".new")
        cert.cert_chain_pems[0].write_to_path(self.cert_path + ".new")
        os.replace(self.key_path + ".new", self.key_path)
        os.replace(self.cert_path + ".new", self.cert_path)
        return cert

    def address(self, protocol):
        return f"127.0.0.1:{self.ports[protocol]}"

    def librdkafka(self, protocol, mechanism=None, password=PASSWORD):
        """confluent-kafka settings for `protocol` (and a SASL `mechanism`)."""
        config = {"bootstrap.servers": self.address(protocol), "security.protocol": protocol}
        if protocol in ("SSL", "SASL_SSL"):
            config["ssl.ca.location"] = self.ca_path
        if mechanism:
            config.update({"sasl.mechanisms": mechanism, "sasl.username": USER,
                           "sasl.password": password})
        return config

    def stop(self):
        self.process.terminate()
        assert self.process.wait(20) == 0


@pytest.fixture(scope="module")
def secured():
    with tempfile.TemporaryDirectory() as tmp:
        broker = SecuredBroker(tmp)
        yield broker
        broker.stop()


@pytest.mark.parametrize("protocol,mechanism", [
    ("PLAINTEXT", None),
    ("SSL", None),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SASL_SSL", "SCRAM-SHA-512"),
    ("SASL_SSL", "PLAIN"),
])
def test_librdkafka_produces_and_consumes_over_each_protocol(secured, protocol, mechanism):
    config = secured.librdkafka(protocol, mechanism)
    roundtrip(config)
    # Metadata names this listener's endpoint, not the first listener's.
    brokers = AdminClient(config).list_topics(timeout=10).brokers
    assert [f"{b.host}:{b.port}" for b in brokers.values()] == [secured.address(protocol)]


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_a_wrong_password_fails_the_login(secured, protocol):
    errors = []
    config = {**secured.librdkafka(protocol, "SCRAM-SHA-256", password="wrong"),
              "error_cb": errors.append}
    admin = AdminClient(config)
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    admin.poll(1)  # serves error_cb
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    assert "invalid credentials" in str(errors[0])


@pytest.mark.parametrize("protocol,mechanism", [
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_SSL", "SCRAM-SHA-512"),
    ("SASL_SSL", "PLAIN"),
    ("SSL", None),
])
def test_kafka_python_produces_and_consumes(secured, protocol, mechanism):
    settings = {"bootstrap_servers": secured.address(protocol), "security_protocol": protocol}
    if protocol.endswith("SSL"):
        settings.update({"ssl_cafile": secured.ca_path})
    if mechanism:
        settings.update({"sasl_mechanism": mechanism, "sasl_plain_username": USER,
                         "sasl_plain_password": PASSWORD})
    topic = f"kp-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(secured.librdkafka("PLAINTEXT"))
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    kafka_python_roundtrip(settings, topic)


def test_kcat_over_sasl_ssl(secured):
    topic = f"kcat-{uuid.uuid4().hex[:8]}"
    options = ["-b", secured.address("SASL_SSL"), "-X", "security.protocol=SASL_SSL",
               "-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", f"sasl.username={USER}",
               "-X", f"sasl.password={PASSWORD}", "-X", f"ssl.ca.location={secured.ca_path}"]
    admin = AdminClient(secured.librdkafka("PLAINTEXT"))
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    kcat(*options, "-P", "-t", topic, input=b"one\ntwo\n")
    out = kcat(*options, "-C", "-t", topic, "-o", "beginning", "-e")
    assert out.decode().split() == ["one", "two"]


def spool_cli(secured, protocol, *args, mechanism=None, ca=True):
    command = [SPOOL_BIN, *args, "--format", "json", "--timeout", "5",
               "--brokers", secured.address(protocol), "--security-protocol", protocol]
    if ca:
        command += ["--ssl-ca-location", secured.ca_path]
    if mechanism:
        command += ["--sasl-mechanism", mechanism, "--sasl-username", USER,
                    "--sasl-password", PASSWORD]
    return subprocess.run(command, capture_output=True, timeout=60)


@pytest.mark.parametrize("protocol,mechanism", [
    ("SASL_SSL", "SCRAM-SHA-512"),
    ("SASL_SSL", "PLAIN"),
    ("SSL", None),
])
def test_the_clis_admin_commands_over_tls(secured, protocol, mechanism):
    """`spool user|acl|quota` and `cluster info` speak TLS and SCRAM themselves."""
    listed = spool_cli(secured, protocol, "user", "list", mechanism=mechanism)
    assert listed.returncode == 0, listed.stderr.decode()
    assert USER in listed.stdout.decode()
    info = spool_cli(secured, protocol, "cluster", "info", mechanism=mechanism)
    assert info.returncode == 0, info.stderr.decode()
    # Without the CA, the broker's certificate is not trusted.
    refused = spool_cli(secured, protocol, "user", "list", mechanism=mechanism, ca=False)
    assert refused.returncode == 4, refused.stderr.decode()
    assert b"certificate" in refused.stderr, refused.stderr.decode()


@pytest.mark.parametrize("protocol,mechanism", [
    ("SASL_SSL", "SCRAM-SHA-256"),
    ("SSL", None),
])
def test_the_clis_client_commands_over_tls(secured, protocol, mechanism):
    """`spool topic|produce|consume|group` speak TLS and SCRAM too (librdkafka with
    OpenSSL)."""
    topic = f"cli-tls-{protocol.lower()}"
    created = spool_cli(secured, protocol, "topic", "create", topic, "-p", "2",
                        mechanism=mechanism)
    assert created.returncode == 0, created.stderr.decode()
    produce = [SPOOL_BIN, "produce", topic, "--timeout", "10", "--brokers",
               secured.address(protocol), "--security-protocol", protocol,
               "--ssl-ca-location", secured.ca_path]
    if mechanism:
        produce += ["--sasl-mechanism", mechanism, "--sasl-username", USER,
                    "--sasl-password", PASSWORD]
    produced = subprocess.run(produce, input=b"one\ntwo\n", capture_output=True, timeout=60)
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = spool_cli(secured, protocol, "consume", topic, "-e", "-g", "cli-tls",
                         mechanism=mechanism)
    assert consumed.returncode == 0, consumed.stderr.decode()
    values = sorted(json.loads(line)["value"] for line in consumed.stdout.decode().splitlines())
    assert values == ["one", "two"]
    described = spool_cli(secured, protocol, "group", "describe", "cli-tls", mechanism=mechanism)
    assert described.returncode == 0, described.stderr.decode()
    # Without the CA, the broker's certificate is not trusted, and the error says so.
    refused = spool_cli(secured, protocol, "topic", "list", mechanism=mechanism, ca=False)
    assert refused.returncode == 1, refused.stderr.decode()
    assert b"certificate" in refused.stderr or b"SSL" in refused.stderr, refused.stderr.decode()


def test_a_renewed_certificate_is_used_without_a_restart(secured):
    # A certificate for another name: verification against 127.0.0.1 now fails...
    secured.issue("renewed.example")
    deadline = time.time() + 20
    failed = False
    while time.time() < deadline and not failed:
        try:
            AdminClient(secured.librdkafka("SSL")).list_topics(timeout=3)
        except KafkaException:
            failed = True
        time.sleep(0.5)
    assert failed, "the new certificate was not picked up"
    # ...and one for the right names again works.
    secured.issue("127.0.0.1", "localhost")
    deadline = time.time() + 20
    while True:
        try:
            AdminClient(secured.librdkafka("SSL")).list_topics(timeout=3)
            break
        except KafkaException:
            assert time.time() < deadline, "the certificate did not come back"
            time.sleep(0.5)


def test_librdkafka_sets_and_describes_scram_credentials(secured):
    """KIP-554 through confluent-kafka's admin API: a user made over the wire logs in."""
    from confluent_kafka.admin import (ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialDeletion, UserScramCredentialUpsertion)
    admin = AdminClient(secured.librdkafka("SASL_SSL", "SCRAM-SHA-512"))
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    altered = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("dave", info, b"dave-secret")])
    for future in altered.values():
        future.result(15)
    described = admin.describe_user_scram_credentials(["dave"])["dave"].result(15)
    infos = described.scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in infos] == [(ScramMechanism.SCRAM_SHA_256, 8192)]
    config = {**secured.librdkafka("SASL_PLAINTEXT"), "sasl.mechanisms": "SCRAM-SHA-256",
              "sasl.username": "dave", "sasl.password": "dave-secret"}
    dave = AdminClient(config)
    assert dave.list_topics(timeout=10).brokers, "dave logs in"
    removed = admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion("dave", ScramMechanism.SCRAM_SHA_256)])
    for future in removed.values():
        future.result(15)
    with pytest.raises(KafkaException):
        AdminClient(config).list_topics(timeout=5)
