-- Search reads the caller's reach from indexes alone. A search that walks the whole reach (text
-- held by many documents) took every object the caller owns, and every file in the folders
-- shared with them, from the table: a row read each, scattered over the whole table (objects
-- are stored in the order they were made, each user's among everyone's), so at 100,000 files a
-- search read a few thousand pages that no connection's page cache held. These indexes hold
-- every column those two parts of the walk test and return (the row key too, as every index
-- does), so the walk reads a run of index entries instead.
CREATE INDEX objects_owned_reach ON objects(owner_id, deleted_at, perm_deleted, system, id);
CREATE INDEX objects_children_reach ON objects(parent_id, kind, deleted_at, perm_deleted, system, id);
