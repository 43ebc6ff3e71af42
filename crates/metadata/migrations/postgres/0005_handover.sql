-- A partition's leader is asked to hand it over to this node (-1: not asked): it
-- commits what it buffered, then moves the leadership itself.
ALTER TABLE partitions ADD COLUMN handover_to INTEGER NOT NULL DEFAULT -1;
-- When (ms since the epoch, by the mover's clock) the partition got its leader: the
-- controller's balancing moves the partitions led longest.
ALTER TABLE partitions ADD COLUMN leader_since_ms BIGINT NOT NULL DEFAULT 0;
