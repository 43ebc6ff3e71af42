"""Real-client tests: each starts the spool binary on a free port with its own data
directory, drives it with kcat, confluent-kafka (librdkafka) and kafka-python, and
stops it."""

import os
import signal
import socket
import subprocess
import tempfile
import time

import pytest

SPOOL_BIN = os.environ.get("SPOOL_BIN", "target/debug/spool")


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


def kcat(*args, input=None, timeout=30):
    result = subprocess.run(["kcat", *args], input=input, capture_output=True, timeout=timeout)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout
