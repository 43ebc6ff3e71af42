-- Kafka's __consumer_offsets, read-only, as a compacted log fed by the offset store:
-- each committed offset carries the partition of that topic its group hashes to (as
-- Kafka's coordinator hashes it) and its offset there, taken from the partition's head
-- when it was committed (the head's row lock orders the commits of one partition).
-- NULL until logged: rows stored before this migration are logged when the store opens.
ALTER TABLE group_offsets ADD COLUMN log_partition INTEGER, ADD COLUMN log_offset BIGINT;
CREATE INDEX group_offsets_by_log ON group_offsets (log_partition, log_offset);
CREATE INDEX group_offsets_unlogged ON group_offsets (group_id) WHERE log_offset IS NULL;
CREATE TABLE offset_log_heads (
    log_partition INTEGER PRIMARY KEY,
    next          BIGINT NOT NULL
);
INSERT INTO offset_log_heads (log_partition, next) SELECT n, 0 FROM generate_series(0, 49) AS n;
