"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs with two clients: changes
take effect at once and survive a restart."""

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic, ResourceType)
from kafka.admin import ConfigResource as KPConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient


def describe(admin, topic):
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=10)
    return {name: (entry.value, entry.is_default) for name, entry in entries.items()}


def test_describe_and_alter_topic_configs(make_broker):
    broker = make_broker()
    admin = AdminClient({"bootstrap.servers": broker.address})
    admin.create_topics([NewTopic("conf", 1, 1, config={"retention.ms": "3600000"})])["conf"].result(timeout=10)
    configs = describe(admin, "conf")
    assert configs["retention.ms"] == ("3600000", False)
    assert configs["max.message.bytes"] == ("1048588", True)

    # Incremental: set one, delete another.
    resource = ConfigResource(ResourceType.TOPIC, "conf", incremental_configs=[
        ConfigEntry("max.message.bytes", "2000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
    ])
    admin.incremental_alter_configs([resource])[resource].result(timeout=10)
    configs = describe(admin, "conf")
    assert configs["max.message.bytes"] == ("2000", False)
    assert configs["retention.ms"] == ("604800000", True)

    # The new limit applies at once.
    producer = Producer({"bootstrap.servers": broker.address, "acks": "all"})
    errors = []
    producer.produce("conf", value=b"x" * 5000, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert errors[0] is not None and errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE

    # Invalid values are refused with INVALID_CONFIG and change nothing.
    bad = ConfigResource(ResourceType.TOPIC, "conf", incremental_configs=[
        ConfigEntry("segment.bytes", "12", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as error:
        admin.incremental_alter_configs([bad])[bad].result(timeout=10)
    assert error.value.args[0].code() == KafkaError.INVALID_CONFIG

    # kafka-python: describe and the non-incremental AlterConfigs (replaces the set).
    kp = KafkaAdminClient(bootstrap_servers=broker.address)
    kp.alter_configs([KPConfigResource(ConfigResourceType.TOPIC, "conf", configs={"segment.bytes": "1048576"})])
    described = kp.describe_configs([KPConfigResource(ConfigResourceType.TOPIC, "conf")])
    kp.close()
    assert "segment.bytes" in str(described)
    configs = describe(admin, "conf")
    assert configs["segment.bytes"] == ("1048576", False)
    assert configs["max.message.bytes"] == ("1048588", True), "AlterConfigs replaces the whole set"

    # Survives a restart.
    broker.stop()
    broker.start()
    admin = AdminClient({"bootstrap.servers": broker.address})
    assert describe(admin, "conf")["segment.bytes"] == ("1048576", False)


def test_broker_settings_are_described_and_read_only(make_broker):
    broker = make_broker("num.partitions=3")
    admin = AdminClient({"bootstrap.servers": broker.address})
    resource = ConfigResource(ResourceType.BROKER, "1")
    entries = admin.describe_configs([resource])[resource].result(timeout=10)
    assert entries["num.partitions"].value == "3"
    assert entries["num.partitions"].is_read_only
    change = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
        ConfigEntry("num.partitions", "5", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException):
        admin.incremental_alter_configs([change])[change].result(timeout=10)


def test_config_file_and_environment(make_broker, tmp_path):
    config = tmp_path / "spool.toml"
    config.write_text('[broker]\n"num.partitions" = 4\n"auto.create.topics.enable" = true\n')
    broker = make_broker(args=["--config", str(config)], env={"SPOOL_AUTO_CREATE_TOPICS_ENABLE": "false"})
    admin = AdminClient({"bootstrap.servers": broker.address})
    resource = ConfigResource(ResourceType.BROKER, "1")
    entries = admin.describe_configs([resource])[resource].result(timeout=10)
    assert entries["num.partitions"].value == "4", "from the file"
    assert entries["auto.create.topics.enable"].value == "false", "the environment wins over the file"
