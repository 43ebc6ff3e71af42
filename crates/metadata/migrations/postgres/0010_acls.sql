-- ACL bindings (Kafka's authorizer model), every field by its wire code:
-- resource type, name and pattern type; principal (User:name or User:*), host (an IP
-- or *), operation and permission (2 DENY, 3 ALLOW).
CREATE TABLE acls (
    resource_type  SMALLINT NOT NULL,
    resource_name  TEXT NOT NULL,
    pattern_type   SMALLINT NOT NULL,
    principal      TEXT NOT NULL,
    host           TEXT NOT NULL,
    operation      SMALLINT NOT NULL,
    permission     SMALLINT NOT NULL,
    PRIMARY KEY (resource_type, resource_name, pattern_type, principal, host, operation,
                 permission)
);
