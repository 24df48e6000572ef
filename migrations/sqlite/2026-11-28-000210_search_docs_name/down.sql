DROP TRIGGER objects_search_docs_name;
DROP TRIGGER search_docs_file_name;
ALTER TABLE search_docs DROP COLUMN creator_id;
ALTER TABLE search_docs DROP COLUMN name_folded;
