-- The schema registry (Confluent's REST API on schema.registry.listen): schemas by
-- global id (never reused, never deleted: a subject's versions point at them), each
-- subject's versions, and the compatibility level and mode of the registry ('') and
-- of subjects.
CREATE TABLE registry_schemas (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    schema_type  TEXT NOT NULL,
    schema_text  TEXT NOT NULL,
    -- The references as JSON: [{"name": …, "subject": …, "version": …}].
    refs         TEXT NOT NULL,
    -- What makes two registrations one schema: the type, the canonical text and the
    -- references, hashed.
    fingerprint  TEXT NOT NULL UNIQUE
);

CREATE TABLE registry_versions (
    subject    TEXT NOT NULL,
    version    INTEGER NOT NULL,
    schema_id  INTEGER NOT NULL REFERENCES registry_schemas (id),
    deleted    BOOLEAN NOT NULL,
    PRIMARY KEY (subject, version)
);
CREATE INDEX registry_versions_by_schema ON registry_versions (schema_id);

CREATE TABLE registry_configs (
    subject        TEXT PRIMARY KEY,
    compatibility  TEXT,
    mode           TEXT
);
