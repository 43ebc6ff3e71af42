-- Delayed delivery's timer: each held record waiting in its partition (the record
-- itself is a hold batch in the partition's log; a row says when it is due), and how
-- far each partition's log has been searched for holds.
CREATE TABLE delayed_records (
    topic_id         BLOB NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    partition        INTEGER NOT NULL,
    hold_offset      INTEGER NOT NULL,
    due_ms           INTEGER NOT NULL,
    -- Set just before a delivery is appended: the log end then. A broker that finds it
    -- set looks for the delivery from there before delivering again.
    delivering_from  INTEGER,
    PRIMARY KEY (topic_id, partition, hold_offset)
);
CREATE INDEX delayed_records_by_due ON delayed_records (topic_id, partition, due_ms);

CREATE TABLE delayed_noted (
    topic_id   BLOB NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    partition  INTEGER NOT NULL,
    through    INTEGER NOT NULL,
    PRIMARY KEY (topic_id, partition)
);
