-- Topics, their partition counts and per-topic configs.
CREATE TABLE topics (
    name        TEXT PRIMARY KEY NOT NULL,
    id          BLOB NOT NULL UNIQUE,
    partitions  INTEGER NOT NULL CHECK (partitions > 0),
    created_ms  INTEGER NOT NULL
);

CREATE TABLE topic_configs (
    topic  TEXT NOT NULL REFERENCES topics(name) ON DELETE CASCADE,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (topic, key)
);

CREATE TABLE broker_configs (
    key    TEXT PRIMARY KEY NOT NULL,
    value  TEXT NOT NULL
);
