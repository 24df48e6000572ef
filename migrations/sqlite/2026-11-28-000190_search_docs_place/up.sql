-- A file's document carries where the file is and whether it is live: its parent folder, and
-- whether it is neither in the trash nor purged (files are never system folders, so a live file
-- may be reached through a share). With the document's number, which already tells its owner
-- (migration 000170), that is all the reach rule asks of a file: the caller's own live file, or
-- a live file that is shared with them or lies in a folder they reach through a share. A search
-- of the text then decides which hits the caller reaches from the documents' rows, read in the
-- order of their numbers, without reading the caller's whole reach or each hit's object.
--
-- The columns are kept in step by the triggers below: a new document takes them from its file,
-- and a file moved, trashed, restored or purged updates its document. Mail leaves them empty.
ALTER TABLE search_docs ADD COLUMN parent_id TEXT;
ALTER TABLE search_docs ADD COLUMN live BOOLEAN NOT NULL DEFAULT FALSE;

UPDATE search_docs SET
    parent_id = (SELECT o.parent_id FROM objects o WHERE o.id = search_docs.ref_id),
    live = COALESCE((SELECT o.deleted_at IS NULL AND o.perm_deleted = FALSE AND o.system IS NULL
                     FROM objects o WHERE o.id = search_docs.ref_id), FALSE)
WHERE kind = 'f';

CREATE TRIGGER search_docs_file_place AFTER INSERT ON search_docs WHEN NEW.kind = 'f'
BEGIN
    UPDATE search_docs SET
        parent_id = (SELECT o.parent_id FROM objects o WHERE o.id = NEW.ref_id),
        live = COALESCE((SELECT o.deleted_at IS NULL AND o.perm_deleted = FALSE AND o.system IS NULL
                         FROM objects o WHERE o.id = NEW.ref_id), FALSE)
    WHERE id = NEW.id;
END;

CREATE TRIGGER objects_search_docs_place
AFTER UPDATE OF parent_id, deleted_at, perm_deleted, system ON objects
WHEN NEW.kind = 'f' AND (NEW.parent_id IS NOT OLD.parent_id OR NEW.deleted_at IS NOT OLD.deleted_at
    OR NEW.perm_deleted IS NOT OLD.perm_deleted OR NEW.system IS NOT OLD.system)
BEGIN
    UPDATE search_docs SET
        parent_id = NEW.parent_id,
        live = (NEW.deleted_at IS NULL AND NEW.perm_deleted = FALSE AND NEW.system IS NULL)
    WHERE kind = 'f' AND ref_id = NEW.id;
END;

-- The index of folded names also holds each object's owner, so that a search by the start of
-- a name reads the range for the owners of the caller's ranges only, without a row per object
-- of the whole server that has that start.
DROP INDEX objects_name;
CREATE INDEX objects_name ON objects(name_folded, owner_id, id);
