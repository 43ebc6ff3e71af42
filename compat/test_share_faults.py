"""A fault check of share groups: three ShareConsumer processes accept records while
the broker is killed (kill -9) and started again — in cluster mode one broker at a
time, so that the partitions' leadership moves — and records keep coming. Then, once
the group has caught up:

- no record's acceptance was confirmed twice (an acknowledged Accept is durable);
- no record confirmed accepted is also a dead letter;
- every record reached a consumer, and every one is done at the broker (each
  share-partition's start offset is the high watermark): each was accepted, or
  archived as a dead letter after too many deliveries (crashes cost deliveries).

CI runs a few cycles (SPOOL_SHARE_FAULT_CYCLES, default 4); `scripts/faultcheck-share`
runs 200.
"""

import json
import multiprocessing
import os
import random
import time
import urllib.error
import urllib.request

from confluent_kafka import Producer

from test_share_groups import SETTINGS, configure, create

CYCLES = int(os.environ.get("SPOOL_SHARE_FAULT_CYCLES", "4"))
TOPIC, GROUP, DLQ = "share-faults", "fault-workers", "dlq.share-faults"
PARTITIONS = 2


def worker(addresses, events, stop):
    from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer
    c = ShareConsumer({"bootstrap.servers": addresses, "group.id": GROUP,
                       "share.acknowledgement.mode": "explicit", "max.poll.records": 50})
    c.subscribe([TOPIC])
    while not stop.is_set():
        try:
            messages = c.poll(0.5)
        except KafkaException:
            continue
        batch = []
        for m in messages:
            if m.error() is None:
                c.acknowledge(m, AcknowledgeType.ACCEPT)
                batch.append((m.partition(), m.offset()))
        if not batch:
            continue
        events.put(("seen", batch))
        try:
            result = c.commit_sync(15)
        except Exception:  # noqa: BLE001 - any failure leaves the outcome unknown
            events.put(("unknown", batch))
            continue
        confirmed = {tp.partition for tp, error in result.items() if error is None}
        events.put(("accepted", [b for b in batch if b[0] in confirmed]))
        events.put(("unknown", [b for b in batch if b[0] not in confirmed]))
    try:
        c.close()
    except Exception:  # noqa: BLE001 - closing against a dying broker may fail
        pass


def produce(broker, count, start):
    producer = Producer({"bootstrap.servers": ",".join(broker.addresses), "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(TOPIC, value=f"v{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(60) == 0


def share_partitions(broker):
    """The group's share-partitions from the coordinator's admin API (any broker that
    answers for the group)."""
    for url in broker.admin_urls:
        try:
            with urllib.request.urlopen(f"{url}/api/groups/{GROUP}", timeout=5) as reply:
                return json.load(reply).get("share_partitions", [])
        except (urllib.error.URLError, OSError):
            continue
    return None


def caught_up(broker):
    parts = share_partitions(broker)
    return (parts is not None and len(parts) == PARTITIONS
            and all(p["lag"] == 0 and p["acquired"] == 0 and p["available"] == 0 for p in parts))


def test_share_consumers_lose_nothing_and_accept_nothing_twice_across_kill9(make_broker):
    broker = make_broker(*SETTINGS)
    create(broker, TOPIC, partitions=PARTITIONS)
    configure(broker, GROUP, share_auto_offset_reset="earliest",
              share_record_lock_duration_ms=2000, share_delivery_count_limit=6,
              errors_deadletterqueue_topic_name=DLQ,
              errors_deadletterqueue_auto_create_topics_enable="true")
    ctx = multiprocessing.get_context("spawn")
    events, stop = ctx.Queue(), ctx.Event()
    addresses = ",".join(broker.addresses)
    workers = [ctx.Process(target=worker, args=(addresses, events, stop)) for _ in range(3)]
    for w in workers:
        w.start()
    produced = 0
    try:
        for cycle in range(CYCLES):
            produce(broker, 200, produced)
            produced += 200
            time.sleep(random.uniform(0.3, 1.5))
            if len(broker.ports) > 1:
                node = random.randint(1, len(broker.ports))
                broker.kill9_node(node)
                time.sleep(random.uniform(0.0, 1.0))
                broker.start_node(node)
            else:
                broker.kill9()
                broker.start()
        produce(broker, 200, produced)
        produced += 200
        deadline = time.time() + 180
        while not caught_up(broker):
            assert time.time() < deadline, f"the group did not catch up: {share_partitions(broker)}"
            time.sleep(0.5)
    finally:
        stop.set()
        # Drained while the workers stop: a process with events still in its queue's
        # pipe does not exit until they are read.
        received = []
        deadline = time.time() + 120
        while any(w.is_alive() for w in workers) and time.time() < deadline:
            received.extend(drain(events, wait=0.2))
        for w in workers:
            if w.is_alive():
                w.kill()
        received.extend(drain(events, wait=1.0))
    seen, accepted, unknown = set(), [], set()
    for kind, batch in received:
        if kind == "seen":
            seen.update(batch)
        elif kind == "accepted":
            accepted.extend(batch)
        else:
            unknown.update(batch)
    from collections import Counter
    twice = sorted(r for r, n in Counter(accepted).items() if n > 1)
    assert twice == [], f"acceptance confirmed twice: {twice[:20]}"
    dead = set()
    for m in read_dlq(broker):
        headers = {k: v.decode() for k, v in m.headers() or []}
        dead.add((int(headers["__dlq.errors.partition"]), int(headers["__dlq.errors.offset"])))
    assert not (dead & set(accepted)), f"accepted and dead letters: {sorted(dead & set(accepted))[:20]}"
    everything = {(i % PARTITIONS, i // PARTITIONS) for i in range(produced)}
    assert everything <= seen, f"never delivered: {sorted(everything - seen)[:20]}"
    ends = everything - set(accepted) - dead - unknown
    assert ends == set(), f"neither accepted nor a dead letter: {sorted(ends)[:20]}"


def drain(events, wait):
    """The events in the queue now (waiting up to `wait` for the first)."""
    import queue
    out = []
    try:
        out.append(events.get(timeout=wait))
        while True:
            out.append(events.get_nowait())
    except queue.Empty:
        return out


def read_dlq(broker):
    """Every dead letter so far (the topic exists only if one was written)."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": broker.address})
    if DLQ not in admin.list_topics(timeout=10).topics:
        return []
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.address, "group.id": "dlq-reader",
                  "enable.auto.commit": False})
    metadata = c.list_topics(DLQ, timeout=10).topics[DLQ]
    out = []
    try:
        for p in metadata.partitions:
            low, high = c.get_watermark_offsets(TopicPartition(DLQ, p), timeout=10)
            if high <= low:
                continue
            c.assign([TopicPartition(DLQ, p, low)])
            while True:
                m = c.poll(5)
                assert m is not None, "a dead letter could not be read"
                if m.error() is None:
                    out.append(m)
                    if m.offset() + 1 >= high:
                        break
    finally:
        c.close()
    return out
