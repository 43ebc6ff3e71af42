-- Each broker's instance (its data directory's id, kept across restarts): a restart
-- replaces its old lease at once, another process claiming a live node id is
-- refused. And the object storage the catalogue describes, bound at the first start
-- in shared-storage mode, so that a broker given another one is refused.
ALTER TABLE brokers ADD COLUMN instance BLOB;
ALTER TABLE catalog ADD COLUMN storage_url TEXT;
