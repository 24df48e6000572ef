-- The triggers as migration 000070 made them; documents keep their numbers, the index its prefix
-- index (both are valid under the older statements).
DROP TRIGGER objects_search_owner;
DROP TRIGGER objects_search_delete;
DROP TRIGGER emails_search_insert;
DROP TRIGGER emails_search_update;
DROP TRIGGER emails_search_delete;
DROP TRIGGER objects_search_names_insert;
DROP TRIGGER objects_search_names_rename;
DROP TRIGGER objects_search_names_owner;
DROP TRIGGER objects_search_names_delete;
DROP TABLE search_names;
DROP TABLE search_names_docs;
DROP TABLE search_owners;
-- A file's text goes with the file.
CREATE TRIGGER objects_search_delete AFTER DELETE ON objects WHEN OLD.kind = 'f'
BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_docs WHERE kind = 'f' AND ref_id = OLD.id);
    DELETE FROM search_docs WHERE kind = 'f' AND ref_id = OLD.id;
END;

-- Mail is indexed as it is written: subject and body, kept in step with the email.
CREATE TRIGGER emails_search_insert AFTER INSERT ON emails
BEGIN
    INSERT INTO search_docs (kind, ref_id) VALUES ('m', NEW.id);
    INSERT INTO search_fts (rowid, title, body)
    SELECT id, NEW.subject, NEW.body FROM search_docs WHERE kind = 'm' AND ref_id = NEW.id;
END;

CREATE TRIGGER emails_search_update AFTER UPDATE OF subject, body ON emails
BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_docs WHERE kind = 'm' AND ref_id = NEW.id);
    INSERT INTO search_fts (rowid, title, body)
    SELECT id, NEW.subject, NEW.body FROM search_docs WHERE kind = 'm' AND ref_id = NEW.id;
END;

CREATE TRIGGER emails_search_delete AFTER DELETE ON emails
BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_docs WHERE kind = 'm' AND ref_id = OLD.id);
    DELETE FROM search_docs WHERE kind = 'm' AND ref_id = OLD.id;
END;

