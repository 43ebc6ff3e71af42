-- Spool's metadata on PostgreSQL: the schema the SQLite migrations 0001-0005 reach,
-- in one step. Everything that belongs to a topic is keyed by its id and goes with it.

-- Raised by every change of a topic, so that brokers know when to reload them.
CREATE TABLE catalog (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    topics_version  BIGINT NOT NULL,
    -- Set once, at the first start: data directories record it and refuse another.
    store_id        TEXT
);
INSERT INTO catalog (id, topics_version) VALUES (1, 0);

CREATE TABLE topics (
    name        TEXT PRIMARY KEY,
    id          UUID NOT NULL UNIQUE,
    partitions  INTEGER NOT NULL CHECK (partitions > 0),
    created_ms  BIGINT NOT NULL
);

CREATE TABLE topic_configs (
    topic_id  UUID NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (topic_id, key)
);

-- Each partition's leader epoch, raised whenever its owner changes, never reused.
CREATE TABLE partitions (
    topic_id      UUID NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    partition     INTEGER NOT NULL,
    leader_epoch  INTEGER NOT NULL,
    PRIMARY KEY (topic_id, partition)
);

-- Dynamic broker configs by scope: '' is the cluster-wide default, otherwise a node id.
CREATE TABLE broker_configs (
    scope  TEXT NOT NULL,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (scope, key)
);

-- The latest coordinator epoch of each group, and the node that claimed it: offset
-- writes carry their epoch and are refused when it is older.
CREATE TABLE group_coordinators (
    group_id  TEXT PRIMARY KEY,
    epoch     BIGINT NOT NULL,
    node_id   INTEGER NOT NULL
);

CREATE TABLE group_offsets (
    group_id      TEXT NOT NULL,
    topic_id      UUID NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    partition     INTEGER NOT NULL,
    committed     BIGINT NOT NULL,
    leader_epoch  INTEGER NOT NULL,
    metadata      TEXT,
    commit_ms     BIGINT NOT NULL,
    PRIMARY KEY (group_id, topic_id, partition)
);
CREATE INDEX group_offsets_by_topic ON group_offsets (topic_id);

-- The next producer id to hand out; taken in blocks by one UPDATE ... RETURNING.
CREATE TABLE producer_ids (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    next  BIGINT NOT NULL
);
INSERT INTO producer_ids (id, next) VALUES (1, 0);
