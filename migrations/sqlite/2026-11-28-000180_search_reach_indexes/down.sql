DROP INDEX objects_parent;
CREATE INDEX objects_parent ON objects(parent_id, kind, name_folded);
DROP INDEX objects_owner;
CREATE INDEX objects_owner ON objects(owner_id, kind);
