"""OAUTHBEARER with real clients. An RSA key made for this run signs the tokens; its
public half is the JSON Web Key Set a local HTTP server publishes, as an identity
provider does, and the broker reads it from there. confluent-kafka (librdkafka, with
`oauth_cb`) and kafka-python (a token provider) produce and consume over
SASL_PLAINTEXT and SASL_SSL; the token's subject is the principal ACLs decide on; a
token signed by another key, or for another audience, fails the client's login. kcat
with librdkafka's unsecured tokens logs in to a broker that allows them for tests, and
not to one that does not. One broker only, as the other security files."""

import base64
import json
import os
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)
from cryptography.hazmat.primitives.asymmetric import rsa
from kafka.sasl.oauth import AbstractTokenProvider

from conftest import (CLUSTER, SPOOL_BIN, free_port, kafka_python_roundtrip, roundtrip,
                      server_certificate)

pytestmark = pytest.mark.skipif(CLUSTER > 1, reason="listeners are tested on one broker")

AUDIENCE, ISSUER = "spool", "https://idp.spool.test"


def b64url_uint(value):
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class IdentityProvider:
    """An RSA signing key and the key set an HTTP server publishes for it."""

    def __init__(self, kid="rsa-1"):
        self.kid = kid
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        numbers = self.key.public_key().public_numbers()
        body = json.dumps({"keys": [{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                                     "n": b64url_uint(numbers.n),
                                     "e": b64url_uint(numbers.e)}]}).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/.well-known/jwks.json"

    def token(self, subject, lifetime=600, audience=AUDIENCE, key=None):
        now = int(time.time())
        claims = {"sub": subject, "iat": now, "exp": now + lifetime, "aud": audience,
                  "iss": ISSUER}
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": self.kid})

    def stop(self):
        self.server.shutdown()


def start_broker(tmp, name, listeners, settings):
    args = [SPOOL_BIN, "--data-dir", os.path.join(tmp, name), "--admin-listen", "off",
            "--set", "listeners=" + ",".join(f"{p}://127.0.0.1:{port}" for p, port in listeners.items())]
    for key, value in settings.items():
        args += ["--set", f"{key}={value}"]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                               stderr=open(os.path.join(tmp, f"{name}.log"), "w"))
    deadline = time.time() + 30
    for port in listeners.values():
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, open(os.path.join(tmp, f"{name}.log")).read()
                assert time.time() < deadline, "the broker did not start"
                time.sleep(0.05)
    return process


@pytest.fixture(scope="module")
def setup():
    with tempfile.TemporaryDirectory() as tmp:
        idp = IdentityProvider()
        ca_path, cert_path, key_path = server_certificate(tmp)
        ports = {"SASL_PLAINTEXT": free_port(), "SASL_SSL": free_port()}
        strict = start_broker(tmp, "strict", ports, {
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            "sasl.oauthbearer.jwks.endpoint.url": idp.url,
            "sasl.oauthbearer.expected.audience": AUDIENCE,
            "sasl.oauthbearer.expected.issuer": ISSUER,
            "ssl.certificate.location": cert_path,
            "ssl.key.location": key_path,
            "authorizer.enabled": "true",
            "allow.everyone.if.no.acl.found": "true",
        })
        unsecured_port = free_port()
        unsecured = start_broker(tmp, "unsecured", {"SASL_PLAINTEXT": unsecured_port}, {
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            "sasl.oauthbearer.unsecured.jwt.allowed": "true",
        })
        yield {"idp": idp, "ca": ca_path, "ports": ports, "unsecured_port": unsecured_port}
        for process in (strict, unsecured):
            process.terminate()
            assert process.wait(20) == 0
        idp.stop()


def librdkafka(setup, protocol, subject="alice", **token_args):
    """confluent-kafka settings logging in with a token `oauth_cb` signs."""
    idp = setup["idp"]

    def oauth_cb(_config):
        return idp.token(subject, **token_args), time.time() + 600

    config = {"bootstrap.servers": f"127.0.0.1:{setup['ports'][protocol]}",
              "security.protocol": protocol, "sasl.mechanisms": "OAUTHBEARER",
              "oauth_cb": oauth_cb}
    if protocol == "SASL_SSL":
        config["ssl.ca.location"] = setup["ca"]
    return config


def with_token(client):
    """confluent-kafka calls `oauth_cb` from poll: a client gets its first token there."""
    client.poll(0.5)
    return client


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_librdkafka_logs_in_with_a_signed_token(setup, protocol):
    roundtrip(librdkafka(setup, protocol), ready=with_token)


@pytest.mark.parametrize("why,token_args", [
    ("another key", {"key": rsa.generate_private_key(public_exponent=65537, key_size=2048)}),
    ("another audience", {"audience": "elsewhere"}),
    ("expired", {"lifetime": -300}),
])
def test_a_bad_token_fails_librdkafkas_login(setup, why, token_args):
    errors = []
    config = {**librdkafka(setup, "SASL_PLAINTEXT", **token_args), "error_cb": errors.append}
    admin = with_token(AdminClient(config))
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    admin.poll(1)  # serves error_cb
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), (why, errors)


def test_the_tokens_subject_is_the_principal_acls_decide_on(setup):
    alice = librdkafka(setup, "SASL_SSL", subject="alice")
    topic = roundtrip(alice, count=1, ready=with_token)
    admin = with_token(AdminClient(alice))
    # Once a topic has a binding, allow.everyone.if.no.acl.found no longer decides for
    # it (as in Kafka): everyone is allowed explicitly, and mallory denied writes.
    everyone = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:*",
                          "*", AclOperation.ALL, AclPermissionType.ALLOW)
    deny = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:mallory",
                      "*", AclOperation.WRITE, AclPermissionType.DENY)
    for created in admin.create_acls([everyone, deny]).values():
        created.result(10)
    errors = []
    mallory = with_token(Producer({**librdkafka(setup, "SASL_SSL", subject="mallory"),
                                   "error_cb": errors.append, "message.timeout.ms": 5000}))
    delivered = []
    mallory.produce(topic, value=b"x", on_delivery=lambda err, msg: delivered.append(err))
    mallory.flush(15)
    assert delivered and delivered[0] is not None
    assert delivered[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, delivered
    # Alice still writes (flush() counts a refused record as delivered: the report decides).
    producer = with_token(Producer(alice))
    reports = []
    producer.produce(topic, value=b"y", on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(15) == 0
    assert reports == [None], reports


class Tokens(AbstractTokenProvider):
    def __init__(self, idp, subject):
        super().__init__()
        self.idp, self.subject = idp, subject

    def token(self):
        return self.idp.token(self.subject)


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_kafka_python_logs_in_with_a_token_provider(setup, protocol):
    settings = {"bootstrap_servers": f"127.0.0.1:{setup['ports'][protocol]}",
                "security_protocol": protocol, "sasl_mechanism": "OAUTHBEARER",
                "sasl_oauth_token_provider": Tokens(setup["idp"], "bob")}
    if protocol == "SASL_SSL":
        settings["ssl_cafile"] = setup["ca"]
    topic = f"kp-oauth-{uuid.uuid4().hex[:8]}"
    admin = with_token(AdminClient(librdkafka(setup, protocol)))  # kept: a collected client fails its futures
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    kafka_python_roundtrip(settings, topic)


def kcat_unsecured(port, *args, input=None):
    return subprocess.run(
        ["kcat", "-b", f"127.0.0.1:{port}", "-X", "security.protocol=SASL_PLAINTEXT",
         "-X", "sasl.mechanisms=OAUTHBEARER", "-X", "enable.sasl.oauthbearer.unsecure.jwt=true",
         "-X", "sasl.oauthbearer.config=principal=carol", *args],
        input=input, capture_output=True, timeout=30)


def test_kcat_with_unsecured_tokens_only_where_allowed(setup):
    port = setup["unsecured_port"]
    topic = f"kcat-oauth-{uuid.uuid4().hex[:8]}"
    produced = kcat_unsecured(port, "-P", "-t", topic, input=b"one\ntwo\n")
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = kcat_unsecured(port, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
    assert consumed.returncode == 0, consumed.stderr.decode()
    assert consumed.stdout.split() == [b"one", b"two"]
    # The strict broker refuses them.
    refused = kcat_unsecured(setup["ports"]["SASL_PLAINTEXT"], "-L", "-m", "5")
    assert refused.returncode != 0
    assert b"unsecured" in refused.stderr, refused.stderr.decode()
