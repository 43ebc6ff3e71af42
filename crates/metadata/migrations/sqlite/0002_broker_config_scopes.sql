-- Dynamic broker configs (AlterConfigs on a BROKER resource), by scope: '' is the
-- cluster-wide default, otherwise the node id the config applies to. The table of
-- 0001 had no scope and was never written.
DROP TABLE broker_configs;

CREATE TABLE broker_configs (
    scope  TEXT NOT NULL,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (scope, key)
);
