DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP INDEX events_pending;
ALTER TABLE events DROP COLUMN dispatched;
