DROP TABLE source_transfers;
DROP TABLE source_locks;
DROP TABLE source_pins;
DROP TABLE sources;
