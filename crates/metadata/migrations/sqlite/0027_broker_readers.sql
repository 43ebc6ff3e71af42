-- Reader brokers (`broker.roles=reader`): they serve reads and Metadata only, so the
-- controller gives them no partitions and groups are not coordinated there.
ALTER TABLE brokers ADD COLUMN reader BOOLEAN NOT NULL DEFAULT FALSE;
