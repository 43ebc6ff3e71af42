-- The transaction coordinator's state: one row per transactional id, the partitions
-- and groups of its transaction in progress, the markers a decided transaction still
-- has to have written, and the group offsets it committed, pending until it commits.
CREATE TABLE transactions (
    transactional_id     TEXT PRIMARY KEY,
    producer_id          INTEGER NOT NULL,
    producer_epoch       INTEGER NOT NULL,
    last_producer_epoch  INTEGER NOT NULL,
    state                TEXT NOT NULL,
    timeout_ms           INTEGER NOT NULL,
    started_ms           INTEGER NOT NULL,
    updated_ms           INTEGER NOT NULL,
    version              INTEGER NOT NULL
);

CREATE TABLE transaction_partitions (
    transactional_id  TEXT NOT NULL REFERENCES transactions (transactional_id) ON DELETE CASCADE,
    topic_id          BLOB NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    partition         INTEGER NOT NULL,
    PRIMARY KEY (transactional_id, topic_id, partition)
);

CREATE TABLE transaction_groups (
    transactional_id  TEXT NOT NULL REFERENCES transactions (transactional_id) ON DELETE CASCADE,
    group_id          TEXT NOT NULL,
    PRIMARY KEY (transactional_id, group_id)
);

CREATE TABLE transaction_markers (
    transactional_id  TEXT NOT NULL REFERENCES transactions (transactional_id) ON DELETE CASCADE,
    topic_id          BLOB NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    partition         INTEGER NOT NULL,
    producer_id       INTEGER NOT NULL,
    producer_epoch    INTEGER NOT NULL,
    is_commit         INTEGER NOT NULL,
    PRIMARY KEY (transactional_id, topic_id, partition)
);

CREATE TABLE transaction_offsets (
    transactional_id  TEXT NOT NULL REFERENCES transactions (transactional_id) ON DELETE CASCADE,
    group_id          TEXT NOT NULL,
    topic_id          BLOB NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    partition         INTEGER NOT NULL,
    committed         INTEGER NOT NULL,
    leader_epoch      INTEGER NOT NULL,
    metadata          TEXT,
    commit_ms         INTEGER NOT NULL,
    PRIMARY KEY (transactional_id, group_id, topic_id, partition)
);
CREATE INDEX transaction_offsets_by_group ON transaction_offsets (group_id);
