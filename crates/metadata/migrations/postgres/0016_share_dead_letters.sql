-- Share groups' dead letters (KIP-1191) waiting for the leader of their dead-letter
-- topic's partition: queued with the share-partition state that archived their
-- records (one store transaction), taken off once written. Each is one Kafka record
-- batch, ready to append. No reference to the source topic: a letter outlives it.
CREATE TABLE share_dead_letters (
    group_id          TEXT NOT NULL,
    topic_id          UUID NOT NULL,
    partition         INTEGER NOT NULL,
    source_offset     BIGINT NOT NULL,
    dead_letter_topic TEXT NOT NULL,
    target_partition  INTEGER NOT NULL,
    batch             BYTEA NOT NULL,
    PRIMARY KEY (group_id, topic_id, partition, source_offset)
);
