-- `seq` names an event (its primary key); the UUID `id` is only carried to subscribers and
-- never looked up, so it needs no index of its own: one b-tree insert less for every change
-- recorded. SQLite drops a UNIQUE constraint by rebuilding the table.
CREATE TABLE events_next (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    subject TEXT NOT NULL,
    actor_id TEXT,
    data TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    dispatched BOOLEAN NOT NULL DEFAULT FALSE
);
INSERT INTO events_next (seq, id, subject, actor_id, data, created_at, dispatched)
SELECT seq, id, subject, actor_id, data, created_at, dispatched FROM events;
-- Sequence numbers are never reused, even those of events no longer kept.
DELETE FROM sqlite_sequence WHERE name = 'events_next';
INSERT INTO sqlite_sequence (name, seq)
SELECT 'events_next', seq FROM sqlite_sequence WHERE name = 'events';
DROP TABLE events;
ALTER TABLE events_next RENAME TO events;
CREATE INDEX events_pending ON events(seq) WHERE dispatched = FALSE;
