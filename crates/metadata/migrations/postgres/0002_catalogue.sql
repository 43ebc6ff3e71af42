-- Shared-storage mode: where each partition's data lives in object storage. The
-- partitions gain their log start, high watermark and idempotent producers' state;
-- WAL objects and the byte ranges of each partition in them; the leader epoch
-- history. Unused (empty) in embedded mode.

ALTER TABLE partitions ADD COLUMN log_start_offset BIGINT NOT NULL DEFAULT 0;
ALTER TABLE partitions ADD COLUMN high_watermark BIGINT NOT NULL DEFAULT 0;
-- The idempotent producers' state as of the high watermark (opaque to this store).
ALTER TABLE partitions ADD COLUMN producer_state BYTEA;

-- One row per object written; never reused names.
CREATE TABLE objects (
    id          BIGSERIAL PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    size        BIGINT NOT NULL,
    created_ms  BIGINT NOT NULL,
    -- When a collection pass first found no range in it; deleted a grace period later.
    unreferenced_ms  BIGINT
);

-- One partition's consecutive batches in one object: offsets base..=last, at byte
-- `position` for `length` bytes.
CREATE TABLE batch_ranges (
    topic_id       UUID NOT NULL,
    partition      INTEGER NOT NULL,
    base_offset    BIGINT NOT NULL,
    last_offset    BIGINT NOT NULL,
    max_timestamp  BIGINT NOT NULL,
    object_id      BIGINT NOT NULL REFERENCES objects (id),
    position       BIGINT NOT NULL,
    length         BIGINT NOT NULL,
    PRIMARY KEY (topic_id, partition, base_offset),
    FOREIGN KEY (topic_id, partition) REFERENCES partitions (topic_id, partition) ON DELETE CASCADE
);
CREATE INDEX batch_ranges_by_object ON batch_ranges (object_id);

-- Which leader epoch began at which offset, per partition.
CREATE TABLE partition_epochs (
    topic_id      UUID NOT NULL,
    partition     INTEGER NOT NULL,
    epoch         INTEGER NOT NULL,
    start_offset  BIGINT NOT NULL,
    PRIMARY KEY (topic_id, partition, epoch),
    FOREIGN KEY (topic_id, partition) REFERENCES partitions (topic_id, partition) ON DELETE CASCADE
);
