-- Search looks its candidates up before deciding what the caller reaches: folders and files by
-- the start of their folded name (a range of this index, ordered bytewise so that a range is
-- exactly a prefix whatever the database's collation; it also holds the id), and by their
-- description only among objects that have one.
CREATE INDEX objects_name ON objects(name_folded COLLATE "C", id);
CREATE INDEX objects_described ON objects(id) WHERE description <> '';
