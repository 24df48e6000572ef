-- Search looks its candidates up before deciding what the caller reaches: folders and files by
-- the start of their folded name (a range of this index, which also holds the id, so the
-- lookup never reads the table), and by their description only among objects that have one.
CREATE INDEX objects_name ON objects(name_folded, id);
CREATE INDEX objects_described ON objects(id) WHERE description <> '';
