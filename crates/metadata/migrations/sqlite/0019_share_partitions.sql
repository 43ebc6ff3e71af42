-- Share groups (KIP-932): each share-partition's state as its leader last wrote it
-- (JSON: the start offset and the records in flight above it), fenced by the state
-- epoch (the partition's leader epoch when it was written: a leader that lost the
-- partition cannot overwrite its successor's state).
CREATE TABLE share_partitions (
    group_id      TEXT NOT NULL,
    topic_id      BLOB NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    partition     INTEGER NOT NULL,
    state_epoch   INTEGER NOT NULL,
    start_offset  INTEGER NOT NULL,
    state         TEXT NOT NULL,
    PRIMARY KEY (group_id, topic_id, partition)
);
CREATE INDEX share_partitions_by_topic ON share_partitions (topic_id);
