-- Lanes: what each broker knows of the groups it coordinates (which have live members
-- in which lanes, and the clients of their base members), one row per broker.
CREATE TABLE lane_presence (
    broker_id INTEGER PRIMARY KEY,
    presence TEXT NOT NULL
);
