-- Committed offsets of consumer groups (OffsetCommit), one row per group and partition.
CREATE TABLE group_offsets (
    group_id      TEXT NOT NULL,
    topic         TEXT NOT NULL,
    partition     INTEGER NOT NULL,
    committed     INTEGER NOT NULL,
    leader_epoch  INTEGER NOT NULL,
    metadata      TEXT,
    commit_ms     INTEGER NOT NULL,
    PRIMARY KEY (group_id, topic, partition)
);
