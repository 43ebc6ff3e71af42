"""Replication factors (docs/cluster.md#replication-factor): embedded mode keeps one
copy and refuses more; in shared-storage mode the object store keeps the copies, so a
topic takes any factor up to the live brokers that lead partitions, and Metadata —
as librdkafka's and kafka-python's admin clients describe it — names that many
replicas, the leader first, all in sync."""

import time
import uuid

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KPNewTopic
from kafka.errors import InvalidReplicationFactorError

from conftest import CLUSTER


def retrying(attempt, timeout=30):
    """`attempt()`, tried again while it is refused for naming more brokers than are
    live: under load a broker late on its lease drops out for a moment."""
    deadline = time.time() + timeout
    while True:
        try:
            return attempt()
        except KafkaException as error:
            code = error.args[0].code()
            if code not in (KafkaError.INVALID_REPLICATION_FACTOR,
                            KafkaError.INVALID_REPLICA_ASSIGNMENT) or time.time() > deadline:
                raise
            time.sleep(0.5)


def create(admin, topic, factor, partitions=3, **configs):
    admin.create_topics([NewTopic(topic, partitions, factor, config=configs)])[topic].result(15)


def refused(admin, topic, factor):
    with pytest.raises(KafkaException) as error:
        create(admin, topic, factor)
    return error.value.args[0]


def described(admin, topic):
    """(leader, replicas, isr) of each partition, as librdkafka's DescribeTopics says."""
    description = admin.describe_topics(TopicCollection([topic]))[topic].result(15)
    return [(p.leader.id, [r.id for r in p.replicas], [r.id for r in p.isr])
            for p in description.partitions]


def test_a_factor_above_what_can_be_kept_is_refused(broker):
    admin = AdminClient({"bootstrap.servers": broker.address})
    error = refused(admin, f"rf-{uuid.uuid4().hex[:6]}", CLUSTER + 1)
    assert error.code() == KafkaError.INVALID_REPLICATION_FACTOR, error
    # kafka-python says the same.
    kp = KafkaAdminClient(bootstrap_servers=broker.address)
    with pytest.raises(InvalidReplicationFactorError):
        kp.create_topics([KPNewTopic(f"rf-{uuid.uuid4().hex[:6]}", 1, CLUSTER + 1)])
    kp.close()
    # The default and 1 are taken everywhere.
    for factor in (-1, 1):
        topic = f"rf-{uuid.uuid4().hex[:6]}"
        create(admin, topic, factor)
        assert all(len(replicas) == 1 for _, replicas, _ in described(admin, topic))


@pytest.mark.skipif(CLUSTER < 3, reason="factors above 1 need a cluster over shared storage")
def test_a_cluster_takes_factors_up_to_its_brokers_and_lists_the_replicas(broker):
    admin = AdminClient({"bootstrap.servers": broker.address})
    topic = f"rf3-{uuid.uuid4().hex[:6]}"
    # The default of many tools, with min.insync.replicas=2 as they pair it. The
    # factor is checked against the writers live at that moment: under load a
    # broker late on its lease drops out for a moment, so the creation is tried again.
    retrying(lambda: create(admin, topic, 3, partitions=6, **{"min.insync.replicas": "2"}))
    writers = None
    for leader, replicas, isr in described(admin, topic):
        assert replicas[0] == leader and len(set(replicas)) == 3, replicas
        assert sorted(isr) == sorted(replicas)
        writers = (writers or set()) | set(replicas)
    assert len(writers) == CLUSTER, "only the writers hold replicas (not the reader)"
    # acks=all writes go through, as the ISR covers min.insync.replicas.
    producer = Producer({"bootstrap.servers": broker.address, "acks": "all"})
    delivered = []
    for i in range(6):
        producer.produce(topic, b"x", partition=i,
                         on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(30)
    assert delivered == [None] * 6
    # kafka-python: a factor of 2, described with two replicas in sync.
    kp = KafkaAdminClient(bootstrap_servers=broker.address)
    other = f"rf2-{uuid.uuid4().hex[:6]}"
    kp.create_topics([KPNewTopic(other, 2, 2)])
    for partition in kp.describe_topics([other])[0]["partitions"]:
        assert len(partition["replicas"]) == 2 and partition["leader"] == partition["replicas"][0]
        assert sorted(partition["isr"]) == sorted(partition["replicas"])
    kp.close()


def test_embedded_assignments_name_this_broker_alone(broker):
    if CLUSTER > 1:
        pytest.skip("a cluster's assignments are tested below")
    admin = AdminClient({"bootstrap.servers": broker.address})
    topic = f"ra-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 2, replica_assignment=[[1], [1]])])[topic].result(15)
    assert described(admin, topic) == [(1, [1], [1]), (1, [1], [1])]
    other = f"ra-{uuid.uuid4().hex[:6]}"
    with pytest.raises(KafkaException) as error:
        admin.create_topics([NewTopic(other, 1, replica_assignment=[[1, 2]])])[other].result(15)
    assert error.value.args[0].code() == KafkaError.INVALID_REPLICA_ASSIGNMENT


@pytest.mark.skipif(CLUSTER < 3, reason="assignments naming other brokers need a cluster")
def test_a_cluster_takes_explicit_assignments_the_first_broker_leading(broker):
    from confluent_kafka.admin import NewPartitions
    admin = AdminClient({"bootstrap.servers": broker.address})
    topic = f"ra-{uuid.uuid4().hex[:6]}"
    # (confluent-kafka takes the partition count with an assignment; librdkafka sends
    # −1 for it and the factor, as Kafka asks.)
    assignment = [[2, 1], [3, 2], [1, 3]]
    retrying(lambda: admin.create_topics(
        [NewTopic(topic, len(assignment), replica_assignment=assignment)])[topic].result(15))
    assert described(admin, topic) == [(r[0], r, r) for r in assignment]
    # More partitions, assigned too (the topic's factor: two brokers each).
    retrying(lambda: admin.create_partitions(
        [NewPartitions(topic, 4, replica_assignment=[[1, 2]])])[topic].result(15))
    assert described(admin, topic)[3] == (1, [1, 2], [1, 2])
    # kafka-python's assignments, by partition.
    kp = KafkaAdminClient(bootstrap_servers=broker.address)
    other = f"ra-{uuid.uuid4().hex[:6]}"
    kp.create_topics([KPNewTopic(other, -1, -1, replica_assignments={0: [3, 1], 1: [2, 3]})])
    partitions = sorted(kp.describe_topics([other])[0]["partitions"], key=lambda p: p["partition"])
    assert [(p["leader"], p["replicas"]) for p in partitions] == [(3, [3, 1]), (2, [2, 3])]
    kp.close()
    # Refused: a broker that is not a live writer, lists of different lengths, a
    # CreatePartitions assignment of another factor.
    for bad in ([[1, 99]], [[1, 2], [3]]):
        name = f"ra-{uuid.uuid4().hex[:6]}"
        with pytest.raises(KafkaException) as error:
            admin.create_topics([NewTopic(name, len(bad), replica_assignment=bad)])[name].result(15)
        assert error.value.args[0].code() == KafkaError.INVALID_REPLICA_ASSIGNMENT, bad
    with pytest.raises(KafkaException) as error:
        admin.create_partitions([NewPartitions(topic, 5, replica_assignment=[[1, 2, 3]])])[topic].result(15)
    assert error.value.args[0].code() == KafkaError.INVALID_REPLICA_ASSIGNMENT
