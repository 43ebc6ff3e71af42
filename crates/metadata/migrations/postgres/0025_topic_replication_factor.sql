-- The replication factor a topic was created with, and the brokers a client named
-- for its partitions (CreateTopics/CreatePartitions assignments: "1,2;2,3", one list
-- per partition, the first the preferred leader, empty where Spool placed it). In
-- shared-storage mode the object store keeps the copies, and Metadata names these
-- brokers (or that many live ones) as replicas.
ALTER TABLE topics ADD COLUMN replication_factor INTEGER NOT NULL DEFAULT 1;
ALTER TABLE topics ADD COLUMN replica_assignment TEXT NOT NULL DEFAULT '';
