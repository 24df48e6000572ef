-- Search reads the caller's reach from indexes alone. A search that walks the whole reach (text
-- held by many documents) took every object the caller owns, and every file in the folders
-- shared with them, from the table: a row read each, scattered over the whole table (objects
-- are stored in the order they were made, each user's among everyone's), so at 100,000 files a
-- search read a few thousand pages that no connection's page cache held. The two indexes those
-- parts of the walk seek in (by owner, by parent) now also hold every column the walk tests and
-- returns (the row key too, as every index does), so the walk reads a run of index entries
-- instead. Their leading columns are unchanged, so every other statement that used them still
-- does.
DROP INDEX objects_owner;
CREATE INDEX objects_owner ON objects(owner_id, kind, deleted_at, perm_deleted, system, id);
DROP INDEX objects_parent;
CREATE INDEX objects_parent ON objects(parent_id, kind, name_folded, deleted_at, perm_deleted, system, id);
