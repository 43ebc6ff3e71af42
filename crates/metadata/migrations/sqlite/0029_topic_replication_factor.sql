-- The replication factor a topic was created with: in shared-storage mode the object
-- store keeps the copies, and Metadata names this many live brokers as replicas.
ALTER TABLE topics ADD COLUMN replication_factor INTEGER NOT NULL DEFAULT 1;
