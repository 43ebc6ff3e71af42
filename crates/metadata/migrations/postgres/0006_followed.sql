-- The topics and assignments versions each broker has caught up with: a broker that
-- changed topics or leaders answers once every live broker has followed the change.
ALTER TABLE brokers ADD COLUMN topics_seen BIGINT NOT NULL DEFAULT 0;
ALTER TABLE brokers ADD COLUMN assignments_seen BIGINT NOT NULL DEFAULT 0;
