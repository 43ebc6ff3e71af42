-- Shared-storage mode: how far each compacted partition has been cleaned in object
-- storage (below it, each key has at most one record).
ALTER TABLE partitions ADD COLUMN cleaned_offset BIGINT NOT NULL DEFAULT 0;
