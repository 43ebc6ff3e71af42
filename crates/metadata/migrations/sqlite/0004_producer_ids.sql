-- The next producer id to hand out (InitProducerId); ids are taken in blocks and
-- never reused, also across restarts.
CREATE TABLE producer_ids (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    next  INTEGER NOT NULL
);
INSERT INTO producer_ids (id, next) VALUES (1, 0);
