DROP INDEX objects_name;
CREATE INDEX objects_name ON objects(name_folded, id);
DROP TRIGGER objects_search_docs_place;
DROP TRIGGER search_docs_file_place;
ALTER TABLE search_docs DROP COLUMN live;
ALTER TABLE search_docs DROP COLUMN parent_id;
