-- Table topics (docs/tables.md). Each Parquet file a partition's leader wrote for
-- the topic's Iceberg table and the table has not yet taken: the offsets it covers
-- ([first_offset, next_offset)) and Iceberg's description of it (JSON). The topic's
-- committer adds the files that continue each partition from its committed offset
-- in one snapshot, then removes their rows; one file per partition and first offset,
-- so two leaders of one partition (a leadership move) never both add theirs.
CREATE TABLE table_files (
    topic_id      BLOB NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    partition     INTEGER NOT NULL,
    first_offset  INTEGER NOT NULL,
    next_offset   INTEGER NOT NULL,
    location      TEXT NOT NULL,
    data_file     TEXT NOT NULL,
    record_count  INTEGER NOT NULL,
    size_bytes    INTEGER NOT NULL,
    -- Records of the span that did not decode (registry tables), in a file of the
    -- dead-letter table: '' and 0 when there were none.
    dead_location      TEXT NOT NULL DEFAULT '',
    dead_data_file     TEXT NOT NULL DEFAULT '',
    dead_record_count  INTEGER NOT NULL DEFAULT 0,
    written_ms    INTEGER NOT NULL,
    PRIMARY KEY (topic_id, partition, first_offset)
);

-- What each broker reports of the table topics' partitions it leads (lag, files and
-- rows written, errors), as JSON, so that any broker shows a whole table.
CREATE TABLE table_status (
    topic_id    BLOB NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    node_id     INTEGER NOT NULL,
    status      TEXT NOT NULL,
    updated_ms  INTEGER NOT NULL,
    PRIMARY KEY (topic_id, node_id)
);
