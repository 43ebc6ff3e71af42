"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs with two clients: changes
take effect at once and survive a restart."""

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ConfigSource, NewTopic, ResourceType)
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


def broker_entries(admin, name="1"):
    # librdkafka sends a BROKER resource's request to that node, which it must know
    # first: a fresh client that has no metadata yet waits for a wake-up that, once in
    # a CI run on a loaded machine, came after 10 s. Metadata first, and room to wait.
    admin.list_topics(timeout=30)
    resource = ConfigResource(ResourceType.BROKER, name)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    return {key: (entry.value, ConfigSource(entry.source), entry.is_read_only) for key, entry in entries.items()}


def topic_entries(admin, topic):
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=10)
    return {key: (entry.value, ConfigSource(entry.source)) for key, entry in entries.items()}


def alter_broker(admin, name, **changes):
    """Incremental SET (a value) or DELETE (None) of broker settings."""
    entries = [ConfigEntry(key.replace("_", "."), value,
                           incremental_operation=AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET)
               for key, value in changes.items()]
    resource = ConfigResource(ResourceType.BROKER, name, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(timeout=10)


def kp_alter(kp, broker, configs):
    response = kp.alter_configs([KPConfigResource(ConfigResourceType.BROKER, broker, configs=configs)])
    assert [resource[0] for resource in response.resources] == [0], response


def test_broker_settings_change_at_run_time_and_persist(make_broker):
    broker = make_broker("num.partitions=3", "log.retention.ms=3600000")
    admin = AdminClient({"bootstrap.servers": broker.address})
    entries = broker_entries(admin)
    assert entries["num.partitions"] == ("3", ConfigSource.STATIC_BROKER_CONFIG, False)
    assert entries["log.retention.ms"] == ("3600000", ConfigSource.STATIC_BROKER_CONFIG, False)
    assert entries["log.segment.bytes"] == ("1073741824", ConfigSource.DEFAULT_CONFIG, False)
    assert entries["max.connections"][2], "read-only: needs a restart"

    # Topics inherit the broker's defaults unless they set the config themselves.
    futures = admin.create_topics([NewTopic("inherits", 1, 1),
                                   NewTopic("explicit", 1, 1, config={"retention.ms": "1000"})])
    for future in futures.values():
        future.result(timeout=10)
    assert topic_entries(admin, "inherits")["retention.ms"] == ("3600000", ConfigSource.STATIC_BROKER_CONFIG)

    # Cluster-wide dynamic defaults (resource name "", which librdkafka cannot name),
    # with kafka-python's AlterConfigs.
    kp = KafkaAdminClient(bootstrap_servers=broker.address)
    kp_alter(kp, "", {"log.retention.ms": "7200000", "message.max.bytes": "2000"})
    inherits = topic_entries(admin, "inherits")
    assert inherits["retention.ms"] == ("7200000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert inherits["max.message.bytes"] == ("2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert topic_entries(admin, "explicit")["retention.ms"] == ("1000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    producer = Producer({"bootstrap.servers": broker.address, "acks": "all"})
    errors = []
    producer.produce("inherits", value=b"x" * 5000, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert errors[0] is not None and errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE

    # Each node's own override, with confluent-kafka: auto-created topics get the new
    # partition count at once (on a cluster, from whichever node creates them).
    for node in broker.node_ids:
        alter_broker(admin, node, num_partitions="5")
    metadata = admin.list_topics(topic="auto-created", timeout=10)
    assert len(metadata.topics["auto-created"].partitions) == 5

    # Read-only settings, unknown settings, bad values and other brokers are refused.
    for name, changes, code in [
        ("1", {"max_connections": "5"}, KafkaError.INVALID_REQUEST),
        ("1", {"no_such_setting": "5"}, KafkaError.INVALID_CONFIG),
        ("1", {"log_segment_bytes": "12"}, KafkaError.INVALID_CONFIG),
    ]:
        with pytest.raises(KafkaException) as error:
            alter_broker(admin, name, **changes)
        assert error.value.args[0].code() == code, (name, changes)
    # librdkafka sends a broker's configs to that broker; kafka-python to any.
    response = kp.alter_configs([KPConfigResource(ConfigResourceType.BROKER, "7", configs={"num.partitions": "2"})])
    assert response.resources[0][0] == KafkaError.INVALID_REQUEST
    kp.close()

    # Dynamic settings outlive a restart and beat the static ones.
    broker.stop()
    broker.start()
    admin = AdminClient({"bootstrap.servers": broker.address})
    entries = broker_entries(admin)
    assert entries["num.partitions"] == ("5", ConfigSource.DYNAMIC_BROKER_CONFIG, False)
    assert entries["message.max.bytes"] == ("2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, False)
    kp = KafkaAdminClient(bootstrap_servers=broker.address)
    described = kp.describe_configs([KPConfigResource(ConfigResourceType.BROKER, "1")])
    entries = {entry[0]: entry[1] for entry in described[0].resources[0][4]}
    assert entries["log.retention.ms"] == "7200000" and entries["num.partitions"] == "5"

    # AlterConfigs replaces the scope's set: dropping an override brings back the
    # static value.
    kp_alter(kp, "", {"message.max.bytes": "2000"})
    kp.close()
    assert topic_entries(admin, "inherits")["retention.ms"] == ("3600000", ConfigSource.STATIC_BROKER_CONFIG)


def test_kafkas_other_broker_configs_are_accepted_stored_and_described(make_broker):
    """Every broker config Kafka 4 documents: one Kafka changes at run time is taken
    (type-checked), kept, described back and changes nothing; a read-only one is
    refused as Kafka refuses it; a password is never shown."""
    broker = make_broker()
    admin = AdminClient({"bootstrap.servers": broker.address})
    resource = ConfigResource(ResourceType.BROKER, "1")
    admin.list_topics(timeout=30)
    described = admin.describe_configs([resource])[resource].result(timeout=30)
    kerberos = described["sasl.kerberos.service.name"]
    assert (kerberos.value, ConfigSource(kerberos.source), kerberos.is_read_only) == \
        (None, ConfigSource.DEFAULT_CONFIG, False)
    assert described["log.dirs"].is_read_only
    assert described["background.threads"].value == "10"
    assert described["ssl.keystore.password"].is_sensitive
    # Spool's own settings answer for the names they share with Kafka.
    assert not described["num.partitions"].is_read_only

    alter_broker(admin, "1", sasl_kerberos_service_name="kafka", background_threads="20",
                 ssl_keystore_password="secret")
    entries = broker_entries(admin)
    assert entries["sasl.kerberos.service.name"] == ("kafka", ConfigSource.DYNAMIC_BROKER_CONFIG, False)
    assert entries["background.threads"] == ("20", ConfigSource.DYNAMIC_BROKER_CONFIG, False)
    assert entries["ssl.keystore.password"] == (None, ConfigSource.DYNAMIC_BROKER_CONFIG, False)

    for changes, code in [
        ({"log_dirs": "/elsewhere"}, KafkaError.INVALID_REQUEST),
        ({"process_roles": "broker"}, KafkaError.INVALID_REQUEST),
        ({"background_threads": "many"}, KafkaError.INVALID_CONFIG),
        ({"sasl_kerberos_min_time_before_relogin": "1.5"}, KafkaError.INVALID_CONFIG),
    ]:
        with pytest.raises(KafkaException) as error:
            alter_broker(admin, "1", **changes)
        assert error.value.args[0].code() == code, changes

    # kafka-python: the cluster-wide default takes cluster-wide configs, not per-broker ones.
    kp = KafkaAdminClient(bootstrap_servers=broker.address)
    kp_alter(kp, "", {"num.replica.fetchers": "4"})
    response = kp.alter_configs([KPConfigResource(ConfigResourceType.BROKER, "",
                                                  configs={"ssl.keystore.location": "/k.jks"})])
    assert response.resources[0][0] == KafkaError.INVALID_REQUEST
    kp.close()
    assert broker_entries(admin)["num.replica.fetchers"] == ("4", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, False)

    # Kept in the metadata store: a restart keeps them; a delete brings back Kafka's default.
    broker.stop()
    broker.start()
    admin = AdminClient({"bootstrap.servers": broker.address})
    entries = broker_entries(admin)
    assert entries["sasl.kerberos.service.name"] == ("kafka", ConfigSource.DYNAMIC_BROKER_CONFIG, False)
    assert entries["num.replica.fetchers"] == ("4", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, False)
    alter_broker(admin, "1", sasl_kerberos_service_name=None)
    assert broker_entries(admin)["sasl.kerberos.service.name"] == (None, ConfigSource.DEFAULT_CONFIG, False)


def test_config_file_and_environment(make_broker, tmp_path):
    config = tmp_path / "spool.toml"
    config.write_text('[broker]\n"num.partitions" = 4\n"auto.create.topics.enable" = true\n')
    broker = make_broker(args=["--config", str(config)], env={"SPOOL_AUTO_CREATE_TOPICS_ENABLE": "false"})
    admin = AdminClient({"bootstrap.servers": broker.address})
    # Metadata first, and room to wait: as `broker_entries` (a loaded cluster once
    # kept librdkafka's request for node 1 waiting past 10 s).
    admin.list_topics(timeout=30)
    resource = ConfigResource(ResourceType.BROKER, "1")
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    assert entries["num.partitions"].value == "4", "from the file"
    assert entries["auto.create.topics.enable"].value == "false", "the environment wins over the file"
