-- Everything that belongs to a topic is keyed by its id and goes with it (foreign
-- keys with cascade); leader epochs per partition; coordinator epochs per group; a
-- version raised by every change of a topic. Configs and offsets of topics that no
-- longer exist (left by deletes before this version) are dropped.

CREATE TABLE catalog (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    topics_version  INTEGER NOT NULL,
    -- Set once, at the first start: data directories record it and refuse another.
    store_id        TEXT
);
INSERT INTO catalog (id, topics_version) VALUES (1, 0);

CREATE TABLE topic_configs_by_id (
    topic_id  BLOB NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (topic_id, key)
);
INSERT INTO topic_configs_by_id (topic_id, key, value)
    SELECT t.id, c.key, c.value FROM topic_configs c JOIN topics t ON t.name = c.topic;
DROP TABLE topic_configs;
ALTER TABLE topic_configs_by_id RENAME TO topic_configs;

-- Rows of topics created before this version are added by the first epoch bump.
CREATE TABLE partitions (
    topic_id      BLOB NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    partition     INTEGER NOT NULL,
    leader_epoch  INTEGER NOT NULL,
    PRIMARY KEY (topic_id, partition)
);

CREATE TABLE group_coordinators (
    group_id  TEXT PRIMARY KEY NOT NULL,
    epoch     INTEGER NOT NULL,
    node_id   INTEGER NOT NULL
);

CREATE TABLE group_offsets_by_id (
    group_id      TEXT NOT NULL,
    topic_id      BLOB NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    partition     INTEGER NOT NULL,
    committed     INTEGER NOT NULL,
    leader_epoch  INTEGER NOT NULL,
    metadata      TEXT,
    commit_ms     INTEGER NOT NULL,
    PRIMARY KEY (group_id, topic_id, partition)
);
INSERT INTO group_offsets_by_id
    (group_id, topic_id, partition, committed, leader_epoch, metadata, commit_ms)
    SELECT o.group_id, t.id, o.partition, o.committed, o.leader_epoch, o.metadata, o.commit_ms
    FROM group_offsets o JOIN topics t ON t.name = o.topic;
DROP TABLE group_offsets;
ALTER TABLE group_offsets_by_id RENAME TO group_offsets;
CREATE INDEX group_offsets_by_topic ON group_offsets (topic_id);
