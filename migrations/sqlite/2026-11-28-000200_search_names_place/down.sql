DROP TRIGGER objects_search_names_place;
DROP TRIGGER search_names_docs_place;
ALTER TABLE search_names_docs DROP COLUMN live;
ALTER TABLE search_names_docs DROP COLUMN system;
ALTER TABLE search_names_docs DROP COLUMN kind;
ALTER TABLE search_names_docs DROP COLUMN parent_id;
