"""Every topic config Kafka documents is accepted, stored and described (with synonyms),
list-valued configs take APPEND and SUBTRACT, unit variants of broker settings apply,
and the honoured ones act: compression.type recompresses, timestamp bounds refuse."""

import glob
import os
import struct
import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ConfigSource, NewTopic, ResourceType)
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KPTopicPartition
from kafka.admin import ConfigResource as KPConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kafka.errors import InvalidTimestampError

from conftest import topic_dir

# A value other than the default for every topic config Kafka 4 documents (and the
# ones Kafka 3 tools still set).
EVERY_CONFIG = {
    "cleanup.policy": "delete",
    "compression.gzip.level": "5",
    "compression.lz4.level": "4",
    "compression.type": "producer",
    "compression.zstd.level": "7",
    "delete.retention.ms": "1000",
    "file.delete.delay.ms": "1000",
    "flush.messages": "100",
    "flush.ms": "1000",
    "follower.replication.throttled.replicas": "*",
    "index.interval.bytes": "2048",
    "leader.replication.throttled.replicas": "0:1",
    "local.retention.bytes": "1000000",
    "local.retention.ms": "1000000",
    "max.compaction.lag.ms": "100000",
    "max.message.bytes": "2000000",
    "message.downconversion.enable": "false",
    "message.format.version": "3.0-IV1",
    "message.timestamp.after.max.ms": "86400000",
    "message.timestamp.before.max.ms": "86400000000",
    "message.timestamp.difference.max.ms": "86400000000",
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.3",
    "min.compaction.lag.ms": "10",
    "min.insync.replicas": "2",
    "preallocate": "true",
    "remote.log.copy.disable": "false",
    "remote.log.delete.on.disable": "false",
    "remote.storage.enable": "false",
    "retention.bytes": "100000000",
    "retention.ms": "100000000",
    "segment.bytes": "2000000",
    "segment.index.bytes": "100000",
    "segment.jitter.ms": "1000",
    "segment.ms": "100000000",
    "unclean.leader.election.enable": "true",
}


def entries(admin, resource_type, name):
    resource = ConfigResource(resource_type, name)
    return admin.describe_configs([resource])[resource].result(timeout=10)


def test_every_documented_topic_config_is_accepted_and_described(broker):
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic("all-configs", 1, 1, config=EVERY_CONFIG)])["all-configs"].result(timeout=10)
    described = entries(admin, ResourceType.TOPIC, "all-configs")
    for name, value in EVERY_CONFIG.items():
        assert described[name].value == value, name
        assert ConfigSource(described[name].source) == ConfigSource.DYNAMIC_TOPIC_CONFIG, name
        synonyms = described[name].synonyms
        assert name in synonyms, name
    # A topic that sets nothing shows Kafka's defaults, with the broker setting that
    # would give them.
    admin.create_topics([NewTopic("no-configs", 1, 1)])["no-configs"].result(timeout=10)
    plain = entries(admin, ResourceType.TOPIC, "no-configs")
    assert plain["retention.ms"].value == "604800000" and plain["retention.ms"].is_default
    assert "log.retention.ms" in plain["retention.ms"].synonyms
    assert plain["compression.type"].value == "producer"
    assert set(plain) >= set(EVERY_CONFIG)

    kp = KafkaAdminClient(bootstrap_servers=broker.address)
    try:
        response = kp.describe_configs([KPConfigResource(ConfigResourceType.TOPIC, "all-configs")],
                                       include_synonyms=True)
        text = str(response)
        for name in EVERY_CONFIG:
            assert name in text, name
        # Bad values of the newly known configs are refused by name.
        response = kp.alter_configs([KPConfigResource(ConfigResourceType.TOPIC, "all-configs",
                                                      configs={"min.cleanable.dirty.ratio": "2"})])
        assert response.resources[0][0] == KafkaError.INVALID_CONFIG, response
    finally:
        kp.close()


def incremental(admin, topic, *ops):
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op) for name, value, op in ops])
    admin.incremental_alter_configs([resource])[resource].result(timeout=10)


def test_list_configs_take_append_and_subtract(broker):
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic("lists", 1, 1)])["lists"].result(timeout=10)
    name = "leader.replication.throttled.replicas"
    incremental(admin, "lists", (name, "0:1", AlterConfigOpType.APPEND))
    incremental(admin, "lists", (name, "1:1,0:1", AlterConfigOpType.APPEND))
    assert entries(admin, ResourceType.TOPIC, "lists")[name].value == "0:1,1:1"
    incremental(admin, "lists", (name, "0:1", AlterConfigOpType.SUBTRACT))
    assert entries(admin, ResourceType.TOPIC, "lists")[name].value == "1:1"
    # Not a list: refused, nothing changes.
    with pytest.raises(KafkaException) as refused:
        incremental(admin, "lists", ("retention.ms", "5", AlterConfigOpType.APPEND))
    assert refused.value.args[0].code() == KafkaError.INVALID_REQUEST
    assert entries(admin, ResourceType.TOPIC, "lists")["retention.ms"].is_default


def test_unit_variants_of_broker_settings(make_broker):
    broker = make_broker("log.retention.hours=2", "log.roll.hours=1")
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic("units", 1, 1)])["units"].result(timeout=10)
    topic = entries(admin, ResourceType.TOPIC, "units")
    assert topic["retention.ms"].value == "7200000"
    assert ConfigSource(topic["retention.ms"].source) == ConfigSource.STATIC_BROKER_CONFIG
    assert topic["retention.ms"].synonyms["log.retention.hours"].value == "2"
    assert topic["segment.ms"].value == "3600000"
    # A finer setting at run time wins over the coarser static one. A node's own
    # settings apply to what it serves: set on every node (librdkafka sends each
    # node's to that node), as on a Kafka cluster.
    for node in broker.node_ids:
        resource = ConfigResource(ResourceType.BROKER, node, incremental_configs=[
            ConfigEntry("log.retention.minutes", "30", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[resource].result(timeout=10)
    assert entries(admin, ResourceType.TOPIC, "units")["retention.ms"].value == "1800000"
    broker_side = entries(admin, ResourceType.BROKER, "1")
    assert broker_side["log.retention.hours"].value == "2"
    assert broker_side["log.retention.ms"].value == "1800000"


def stored_codecs(broker, topic):
    """The codec of every batch in the topic's partition-0 segment files."""
    codecs = []
    for path in sorted(glob.glob(os.path.join(topic_dir(broker, topic), "0", "*.log"))):
        data = open(path, "rb").read()
        position = 0
        while position + 61 <= len(data):
            length = struct.unpack(">i", data[position + 8:position + 12])[0]
            attributes = struct.unpack(">h", data[position + 21:position + 23])[0]
            codecs.append(attributes & 7)
            position += 12 + length
    return codecs


@pytest.mark.parametrize("codec,codec_id", [("zstd", 4), ("gzip", 1), ("lz4", 3), ("snappy", 2),
                                            ("uncompressed", 0)])
def test_compression_type_recompresses_what_producers_send(broker, codec, codec_id):
    admin = AdminClient({"bootstrap.servers": broker.address})
    topic = f"packed-{codec}"
    admin.create_topics([NewTopic(topic, 1, 1, config={"compression.type": codec})])[topic].result(timeout=10)
    values = [f"value {i} ".encode() * 20 for i in range(200)]
    # librdkafka sends lz4, kafka-python gzip: the topic's codec is what is stored.
    producer = Producer({"bootstrap.servers": broker.address, "compression.type": "lz4",
                         "linger.ms": 20, "enable.idempotence": True})
    for value in values[:100]:
        producer.produce(topic, value=value, key=b"k")
    assert producer.flush(10) == 0
    kp = KafkaProducer(bootstrap_servers=broker.address, compression_type="gzip", linger_ms=20)
    for value in values[100:]:
        kp.send(topic, value=value, key=b"k")
    kp.flush(10)
    kp.close()
    codecs = stored_codecs(broker, topic)
    assert codecs and set(codecs) == {codec_id}, codecs
    consumer = KafkaConsumer(bootstrap_servers=broker.address, auto_offset_reset="earliest",
                             consumer_timeout_ms=5000)
    consumer.assign([KPTopicPartition(topic, 0)])
    got = [record.value for record in consumer]
    consumer.close()
    assert got == values


def test_timestamps_beyond_the_topic_bounds_are_refused(broker):
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic("clock", 1, 1, config={
        "message.timestamp.after.max.ms": "60000",
        "message.timestamp.before.max.ms": "86400000"})])["clock"].result(timeout=10)
    now = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": broker.address})
    outcomes = []
    for timestamp in (now, now + 3_600_000, now - 2 * 86_400_000):
        producer.produce("clock", value=b"v", timestamp=timestamp,
                         on_delivery=lambda err, msg: outcomes.append(err))
        producer.flush(10)
    assert outcomes[0] is None
    assert [e.code() for e in outcomes[1:]] == [KafkaError.INVALID_TIMESTAMP] * 2
    kp = KafkaProducer(bootstrap_servers=broker.address, retries=0)
    future = kp.send("clock", value=b"late", timestamp_ms=now + 3_600_000)
    with pytest.raises(InvalidTimestampError):
        future.get(timeout=10)
    kp.send("clock", value=b"fine", timestamp_ms=int(time.time() * 1000)).get(timeout=10)
    kp.close()
