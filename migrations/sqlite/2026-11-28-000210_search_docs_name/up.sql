-- A file's document also carries the file's folded name and its creator: with its place
-- (migration 000190) that is all a search by text asks of a file it finds by its text alone
-- (not by its name), when no other criterion needs the file's record: the rule (whether an
-- Uploader sees only the files they created), and the order by score or name. Such hits are
-- then ranked and counted from the documents' rows, and only the page's files are read.
--
-- Kept in step by the triggers below: a new document takes them from its file, and a file
-- renamed (or given another creator) updates its document.
ALTER TABLE search_docs ADD COLUMN name_folded TEXT;
ALTER TABLE search_docs ADD COLUMN creator_id TEXT;

UPDATE search_docs SET
    name_folded = (SELECT o.name_folded FROM objects o WHERE o.id = search_docs.ref_id),
    creator_id = (SELECT o.creator_id FROM objects o WHERE o.id = search_docs.ref_id)
WHERE kind = 'f';

CREATE TRIGGER search_docs_file_name AFTER INSERT ON search_docs WHEN NEW.kind = 'f'
BEGIN
    UPDATE search_docs SET
        name_folded = (SELECT o.name_folded FROM objects o WHERE o.id = NEW.ref_id),
        creator_id = (SELECT o.creator_id FROM objects o WHERE o.id = NEW.ref_id)
    WHERE id = NEW.id;
END;

CREATE TRIGGER objects_search_docs_name AFTER UPDATE OF name_folded, creator_id ON objects
WHEN NEW.kind = 'f' AND (NEW.name_folded IS NOT OLD.name_folded OR NEW.creator_id IS NOT OLD.creator_id)
BEGIN
    UPDATE search_docs SET name_folded = NEW.name_folded, creator_id = NEW.creator_id
    WHERE kind = 'f' AND ref_id = NEW.id;
END;
