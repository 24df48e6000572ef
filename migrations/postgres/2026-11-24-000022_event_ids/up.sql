-- `seq` names an event (its primary key); the UUID `id` is only carried to subscribers and
-- never looked up, so it needs no index of its own: one b-tree insert less for every change
-- recorded.
ALTER TABLE events DROP CONSTRAINT events_id_key;
