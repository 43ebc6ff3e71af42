"""One consumer-group member in its own process, for compat/test_groups.py.

Prints one JSON object per line on stdout:
  {"event": "assigned", "partitions": [...]}   partitions added by a rebalance
  {"event": "revoked", "partitions": [...]}    partitions taken away
  {"event": "record", "partition": p, "offset": o, "value": "..."}
Offsets are committed synchronously after every record. SIGTERM closes the consumer
cleanly (LeaveGroup, except for static members); SIGKILL is a crash. `--protocol
consumer` joins with the consumer protocol (KIP-848, confluent-kafka only).
"""

import argparse
import json
import signal
import sys

stopping = False


def emit(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def stop(*_):
    global stopping
    stopping = True


def run_confluent(args):
    from confluent_kafka import Consumer, KafkaException

    config = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        # Tests restart the broker under running members: reconnect within a second
        # rather than after librdkafka's backoff of up to 10 s.
        "reconnect.backoff.max.ms": 1000,
    }
    if args.protocol == "consumer":
        # KIP-848: the broker assigns and sets the session and heartbeat interval
        # (librdkafka refuses the classic protocol's settings with it).
        config["group.protocol"] = "consumer"
        if args.assignor in ("uniform", "range"):
            config["group.remote.assignor"] = args.assignor
    else:
        config["session.timeout.ms"] = args.session_ms
        config["heartbeat.interval.ms"] = max(100, args.session_ms // 10)
        config["partition.assignment.strategy"] = args.assignor
    if args.instance:
        config["group.instance.id"] = args.instance
    consumer = Consumer(config)

    def assigned(c, partitions):
        emit(event="assigned", partitions=sorted(p.partition for p in partitions))

    def revoked(c, partitions):
        emit(event="revoked", partitions=sorted(p.partition for p in partitions))

    consumer.subscribe([args.topic], on_assign=assigned, on_revoke=revoked)
    while not stopping:
        message = consumer.poll(0.1)
        if message is None or message.error():
            continue
        emit(event="record", partition=message.partition(), offset=message.offset(),
             value=message.value().decode())
        try:
            consumer.commit(message=message, asynchronous=False)
        except KafkaException as error:
            # A rebalance (or a coordinator restart) took the partition's generation
            # away: the record may come again after the rejoin (at least once).
            emit(event="commit_failed", error=str(error))
    consumer.close()


def run_kafka_python(args):
    from kafka import KafkaConsumer, ConsumerRebalanceListener, OffsetAndMetadata, TopicPartition
    from kafka.errors import KafkaError

    class Listener(ConsumerRebalanceListener):
        def on_partitions_assigned(self, assigned):
            emit(event="assigned", partitions=sorted(p.partition for p in assigned))

        def on_partitions_revoked(self, revoked):
            emit(event="revoked", partitions=sorted(p.partition for p in revoked))

    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=max(100, args.session_ms // 10),
    )
    consumer.subscribe([args.topic], listener=Listener())
    while not stopping:
        batches = consumer.poll(timeout_ms=100)
        for tp, records in batches.items():
            for record in records:
                emit(event="record", partition=record.partition, offset=record.offset,
                     value=record.value.decode())
                try:
                    consumer.commit({TopicPartition(tp.topic, tp.partition): OffsetAndMetadata(record.offset + 1, "", -1)})
                except KafkaError as error:
                    emit(event="commit_failed", error=str(error))
    consumer.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", choices=["confluent", "kafka-python"], default="confluent")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--instance")
    parser.add_argument("--assignor", default="range")
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--protocol", choices=["classic", "consumer"], default="classic")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, stop)
    if args.client == "confluent":
        run_confluent(args)
    else:
        run_kafka_python(args)


if __name__ == "__main__":
    main()
