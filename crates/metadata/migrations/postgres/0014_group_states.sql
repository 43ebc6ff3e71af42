-- Consumer-protocol groups (KIP-848): each group's state as its coordinator last
-- wrote it (JSON: epochs, members, target assignment), fenced by the group's
-- coordinator epoch as its committed offsets are; and each group's configs
-- (IncrementalAlterConfigs on a GROUP resource).
CREATE TABLE group_states (
    group_id  TEXT PRIMARY KEY,
    state     TEXT NOT NULL
);

CREATE TABLE group_configs (
    group_id  TEXT NOT NULL,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (group_id, key)
);
