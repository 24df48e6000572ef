-- Folder notifications. A subscription is one row per user and folder with the interface's two
-- flags (0 or 1); both 0 keeps the row. Times are Unix seconds.
CREATE TABLE folder_notifications (
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    object_id TEXT NOT NULL REFERENCES objects(id) ON DELETE CASCADE,
    file_added BIGINT NOT NULL,
    comment_added BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    modified_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, object_id)
);
CREATE INDEX folder_notifications_object ON folder_notifications(object_id);

-- What a subscriber has yet to be told, per folder: a file that arrived (`kind` 'file') or a
-- comment added to a file there ('comment'), by whom, gathered until the subscriber's digest of
-- that folder is sent.
CREATE TABLE notification_items (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    folder_id TEXT NOT NULL REFERENCES objects(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    object_id TEXT NOT NULL,
    actor_id TEXT,
    detail TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX notification_items_user_folder ON notification_items(user_id, folder_id);

-- Which events the notification scan has read. Events recorded before this migration count as
-- read: subscriptions start now. An index on the unread ones keeps the scan to what is new.
ALTER TABLE events ADD COLUMN notified BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE events SET notified = TRUE;
CREATE INDEX events_unnotified ON events(seq) WHERE notified = FALSE;
