"""README's five-minute tour with kcat, step by step, against the broker: what it says
each step prints is what the broker answers (issue 32: its metrics line showed a count
that a restarted broker does not have). The expected lines are read from README.md,
so the test and the README cannot drift apart."""

import re
import urllib.request

import pytest

from conftest import CLUSTER, METADATA, kcat

pytestmark = pytest.mark.skipif(
    METADATA != "sqlite" or CLUSTER > 1, reason="the tour runs the embedded broker")


def readme_comment(command_start):
    """The `# …` comment of README's command line starting with `command_start`."""
    with open("README.md") as f:
        for line in f:
            if line.startswith(command_start):
                return line.split("#", 1)[1].strip()
    raise AssertionError(f"README has no line starting {command_start!r}")


def test_the_readme_tour_prints_what_it_says(broker):
    servers = broker.address
    kcat("-b", servers, "-P", "-t", "tour", "-K:", input=b"k1:hello\nk2:world\nk3:again\n")
    read = kcat("-b", servers, "-C", "-t", "tour", "-o", "beginning", "-e", "-f", "%p %o %k=%s\n")
    assert read.decode().splitlines() == ["0 0 k1=hello", "0 1 k2=world", "0 2 k3=again"]

    broker.kill9()
    broker.start_node(1)
    again = kcat("-b", servers, "-C", "-t", "tour", "-o", "beginning", "-e")
    assert again.decode().split() == ["hello", "world", "again"]

    kcat("-b", servers, "-P", "-t", "tour", "-K:", input=b"k4:more\n")
    with urllib.request.urlopen(broker.admin_url + "/metrics", timeout=10) as answer:
        metrics = answer.read().decode()
    expected = readme_comment("curl -s 127.0.0.1:9644/metrics | grep records_in_total")
    name = expected.rsplit(" ", 1)[0]
    found = [line for line in metrics.splitlines() if line.startswith(name + " ")]
    assert found == [expected], f"README says {expected!r}; /metrics has {found!r}"
    assert re.match(r'spool_topic_records_in_total\{topic="tour"\} \d+$', expected)
