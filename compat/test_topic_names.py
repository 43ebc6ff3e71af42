"""Topic names Kafka refuses are refused at once, with INVALID_TOPIC_EXCEPTION, in
Metadata, CreateTopics and Produce, so that clients fail fast instead of waiting."""

import time

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KPNewTopic
from kafka.errors import InvalidTopicError

ILLEGAL = ["bad name", "a/b", "..", "x" * 250]


def test_librdkafka_fails_messages_to_an_illegal_topic_at_once(broker):
    admin = AdminClient({"bootstrap.servers": broker.address})
    for name in ILLEGAL:
        metadata = admin.list_topics(topic=name, timeout=10)
        assert metadata.topics[name].error.code() == KafkaError.TOPIC_EXCEPTION, name
    producer = Producer({"bootstrap.servers": broker.address, "message.timeout.ms": 60000})
    outcomes = []
    started = time.monotonic()
    producer.produce("bad name", b"value", on_delivery=lambda err, msg: outcomes.append(err))
    producer.flush(30)
    assert len(outcomes) == 1 and outcomes[0] is not None
    assert outcomes[0].code() == KafkaError.TOPIC_EXCEPTION
    assert time.monotonic() - started < 20, "failed at once, not at message.timeout.ms"
    assert "bad name" not in admin.list_topics(timeout=10).topics


def test_kafka_python_admin_is_told_the_name_is_invalid(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.address)
    try:
        for name in ILLEGAL:
            try:
                response = admin.create_topics([KPNewTopic(name, 1, 1)])
            except InvalidTopicError:
                continue
            # kafka-python 2.x returns the response instead of raising, by version.
            codes = [error[1] for error in response.topic_errors]
            assert codes == [InvalidTopicError.errno], (name, response)
    finally:
        admin.close()
