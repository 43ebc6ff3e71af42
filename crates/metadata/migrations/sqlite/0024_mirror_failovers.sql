-- Each failed-over mirror partition, once its leader settled it: the log end then
-- (where the source's records end and this cluster's begin) and the producer-id
-- floor it found (every source producer id in the partition is below it). A leader
-- that finds its partition here settles nothing again: records past that end are
-- this cluster's own.
CREATE TABLE mirror_failovers (
    topic_id           BLOB NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    partition          INTEGER NOT NULL,
    log_end            INTEGER NOT NULL,
    producer_id_floor  INTEGER NOT NULL,
    settled_ms         INTEGER NOT NULL,
    PRIMARY KEY (topic_id, partition)
);
