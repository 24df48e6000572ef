DROP INDEX events_unnotified;
ALTER TABLE events DROP COLUMN notified;
DROP TABLE notification_items;
DROP TABLE folder_notifications;
