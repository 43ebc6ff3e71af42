-- Client quotas (KIP-13, KIP-124, KIP-546): an entity's rate by key. Each part of the
-- entity (user, client id) is a kind (0 absent, 1 default, 2 named) and a name (empty
-- unless named).
CREATE TABLE client_quotas (
    user_kind    INTEGER NOT NULL,
    user_name    TEXT NOT NULL,
    client_kind  INTEGER NOT NULL,
    client_name  TEXT NOT NULL,
    quota_key    TEXT NOT NULL,
    quota_value  REAL NOT NULL,
    PRIMARY KEY (user_kind, user_name, client_kind, client_name, quota_key)
);
