-- Transaction checkers (RocketMQ's check-back): per transactional-id prefix, the HTTP
-- endpoint asked whether an undecided transaction committed. Headers one
-- `name: value` a line.
CREATE TABLE txn_checkers (
    prefix      TEXT PRIMARY KEY,
    url         TEXT NOT NULL,
    headers     TEXT NOT NULL,
    timeout_ms  INTEGER NOT NULL,
    ca_pem      TEXT
);
