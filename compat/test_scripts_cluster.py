"""`scripts/cluster`, as docs/cluster.md's "A local cluster" uses it (issue 32): it
sets up what it needs itself, its three brokers answer a real client, and `stop`
leaves nothing running; a start that fails says why at once and stops what it had
started (PostgreSQL, moto). Run once, in the first (embedded) pass of the suite."""

import os
import socket
import subprocess
import time

import pytest
from confluent_kafka.admin import AdminClient

from conftest import CLUSTER, METADATA, SPOOL_BIN

pytestmark = pytest.mark.skipif(
    METADATA != "sqlite" or CLUSTER > 1, reason="the script is tried once, not per mode")

PORTS = (19092, 19093, 19094)


def cluster(*args, spool_bin, timeout=180):
    return subprocess.run(["scripts/cluster", *args], env={**os.environ, "SPOOL_BIN": spool_bin},
                          capture_output=True, text=True, timeout=timeout)


def answers(port):
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
        return True
    except OSError:
        return False


def running(pidfile):
    if not os.path.exists(pidfile):
        return False
    with open(pidfile) as f:
        first = f.readline().strip()
    try:
        os.kill(int(first), 0)
        return True
    except (OSError, ValueError):
        return False


def postgres_running(directory):
    """Whether a PostgreSQL server of the cluster in DIRECTORY runs (its data is in
    DIRECTORY, or in a directory of its own under /tmp when the postgres user cannot
    reach DIRECTORY)."""
    found = subprocess.run(["pgrep", "-f", f"postgres.*({directory}|spool-cluster-postgres)"],
                           capture_output=True, text=True)
    return found.returncode == 0


def nothing_left(directory):
    """Whether the cluster in DIRECTORY left no server running."""
    return (not postgres_running(directory)
            and not running(os.path.join(directory, "s3", "pid"))
            and not any(answers(port) for port in PORTS))


def test_a_local_cluster_starts_serves_and_stops(tmp_path):
    directory = str(tmp_path / "cluster")
    started = cluster("start", directory, spool_bin=os.path.abspath(SPOOL_BIN))
    try:
        assert started.returncode == 0, started.stderr
        assert "bootstrap servers: 127.0.0.1:19092" in started.stdout, started.stdout
        admin = AdminClient({"bootstrap.servers": "127.0.0.1:19092"})
        deadline = time.monotonic() + 30
        while True:
            brokers = sorted(admin.list_topics(timeout=10).brokers)
            if brokers == [1, 2, 3] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert brokers == [1, 2, 3]
    finally:
        stopped = cluster("stop", directory, spool_bin=os.path.abspath(SPOOL_BIN))
    assert stopped.returncode == 0, stopped.stderr
    assert nothing_left(directory)


def test_a_failed_start_says_why_and_stops_what_it_started(tmp_path):
    directory = str(tmp_path / "cluster")
    began = time.monotonic()
    # A "broker" that ends at once, as one refusing its settings does.
    failed = cluster("start", directory, spool_bin="/bin/false")
    took = time.monotonic() - began
    assert failed.returncode != 0
    assert "broker 1 did not start" in failed.stderr, failed.stderr
    assert "stopping what had started" in failed.stderr, failed.stderr
    assert took < 60, f"failed fast, not after waiting out every retry: {took:.0f} s"
    assert nothing_left(directory), "PostgreSQL and moto were stopped"
