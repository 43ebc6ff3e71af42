-- Cluster mode: the brokers with their leases, the controller lease, and each
-- partition's leader (-1: none yet). Unused in embedded mode.
CREATE TABLE brokers (
    node_id           INTEGER PRIMARY KEY,
    -- A random id drawn at each process start: a restarted broker replaces its old
    -- incarnation, whose renewals then fail.
    incarnation       UUID NOT NULL,
    host              TEXT NOT NULL,
    port              INTEGER NOT NULL,
    rack              TEXT,
    lease_expires_ms  BIGINT NOT NULL,
    draining          BOOLEAN NOT NULL DEFAULT FALSE
);
ALTER TABLE catalog ADD COLUMN assignments_version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE catalog ADD COLUMN controller INTEGER;
ALTER TABLE catalog ADD COLUMN controller_incarnation UUID;
ALTER TABLE catalog ADD COLUMN controller_epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE catalog ADD COLUMN controller_expires_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE partitions ADD COLUMN leader INTEGER NOT NULL DEFAULT -1;
CREATE INDEX partitions_by_leader ON partitions (leader);
