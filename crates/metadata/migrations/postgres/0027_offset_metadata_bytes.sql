-- A committed offset's metadata as bytes: clients may send NUL in it (confluent-kafka
-- sends its C terminator), which PostgreSQL's text refuses (SQLite keeps such values
-- as blobs in its text columns).
ALTER TABLE group_offsets ALTER COLUMN metadata TYPE BYTEA USING convert_to(metadata, 'UTF8');
ALTER TABLE transaction_offsets ALTER COLUMN metadata TYPE BYTEA USING convert_to(metadata, 'UTF8');
