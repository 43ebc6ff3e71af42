-- Mirror links (BMQ's Mirror): which source cluster's topics are copied here at their
-- own offsets. source_config and failed_over are JSON.
CREATE TABLE mirror_links (
    name           TEXT PRIMARY KEY,
    source         TEXT NOT NULL,
    source_config  TEXT NOT NULL,
    topics         TEXT NOT NULL,
    groups_regex   TEXT,
    start_at       TEXT NOT NULL,
    paused         BOOLEAN NOT NULL,
    failed_over    TEXT NOT NULL,
    created_ms     BIGINT NOT NULL
);
