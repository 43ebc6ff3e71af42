-- SCRAM credentials (KIP-554): what checks a user's SCRAM proof or PLAIN password,
-- never the password. mechanism: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
CREATE TABLE scram_credentials (
    user_name   TEXT NOT NULL,
    mechanism   INTEGER NOT NULL,
    salt        BLOB NOT NULL,
    iterations  INTEGER NOT NULL,
    stored_key  BLOB NOT NULL,
    server_key  BLOB NOT NULL,
    PRIMARY KEY (user_name, mechanism)
);
