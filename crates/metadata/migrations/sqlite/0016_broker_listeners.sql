-- Each broker's endpoint on every one of its listeners (a line per listener:
-- `NAME host port`), so that Metadata names other brokers on the listener asked.
ALTER TABLE brokers ADD COLUMN listeners TEXT NOT NULL DEFAULT '';
