ALTER TABLE events ADD CONSTRAINT events_id_key UNIQUE (id);
