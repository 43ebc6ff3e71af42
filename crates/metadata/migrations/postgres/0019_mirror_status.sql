-- What each broker reports of a mirror link it follows (its state, counts and the
-- partitions it copies), as JSON, so that any broker can describe the whole link.
CREATE TABLE mirror_status (
    link        TEXT NOT NULL,
    node_id     INTEGER NOT NULL,
    status      TEXT NOT NULL,
    updated_ms  BIGINT NOT NULL,
    PRIMARY KEY (link, node_id)
);
