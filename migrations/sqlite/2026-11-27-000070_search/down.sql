DROP TRIGGER emails_search_delete;
DROP TRIGGER emails_search_update;
DROP TRIGGER emails_search_insert;
DROP TRIGGER objects_search_delete;
DROP TRIGGER file_versions_search;
DELETE FROM jobs WHERE kind = 'search-extract';
DROP TABLE search_fts;
DROP TABLE search_docs;
DROP TABLE search_texts;
