CREATE UNIQUE INDEX events_id ON events(id);
