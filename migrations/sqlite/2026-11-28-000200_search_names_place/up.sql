-- Each folder's and file's row in the trigram index of names carries where the object is and
-- what it is: its parent, its kind, its system role (the base, sync and "my" folders) and
-- whether it is live (neither in the trash nor purged). With the row's number, which tells the
-- owner (migration 000170), that is all the reach rule asks of an object, as migration 000190
-- gave the documents of file text: a search for a part of a name then decides which names the
-- caller reaches from the rows the index answers, without looking each object up, and without
-- first counting the names to choose between looking them up and walking the whole reach.
--
-- Kept in step by the triggers below: a new row takes them from its object, and an object
-- moved, trashed, restored or purged updates its row.
ALTER TABLE search_names_docs ADD COLUMN parent_id TEXT;
ALTER TABLE search_names_docs ADD COLUMN kind TEXT NOT NULL DEFAULT 'f';
ALTER TABLE search_names_docs ADD COLUMN system TEXT;
ALTER TABLE search_names_docs ADD COLUMN live BOOLEAN NOT NULL DEFAULT FALSE;

UPDATE search_names_docs SET
    parent_id = (SELECT o.parent_id FROM objects o WHERE o.id = search_names_docs.object_id),
    kind = COALESCE((SELECT o.kind FROM objects o WHERE o.id = search_names_docs.object_id), 'f'),
    system = (SELECT o.system FROM objects o WHERE o.id = search_names_docs.object_id),
    live = COALESCE((SELECT o.deleted_at IS NULL AND o.perm_deleted = FALSE
                     FROM objects o WHERE o.id = search_names_docs.object_id), FALSE);

CREATE TRIGGER search_names_docs_place AFTER INSERT ON search_names_docs
BEGIN
    UPDATE search_names_docs SET
        parent_id = (SELECT o.parent_id FROM objects o WHERE o.id = NEW.object_id),
        kind = COALESCE((SELECT o.kind FROM objects o WHERE o.id = NEW.object_id), 'f'),
        system = (SELECT o.system FROM objects o WHERE o.id = NEW.object_id),
        live = COALESCE((SELECT o.deleted_at IS NULL AND o.perm_deleted = FALSE
                         FROM objects o WHERE o.id = NEW.object_id), FALSE)
    WHERE id = NEW.id;
END;

CREATE TRIGGER objects_search_names_place
AFTER UPDATE OF parent_id, deleted_at, perm_deleted, system ON objects
WHEN NEW.parent_id IS NOT OLD.parent_id OR NEW.deleted_at IS NOT OLD.deleted_at
    OR NEW.perm_deleted IS NOT OLD.perm_deleted OR NEW.system IS NOT OLD.system
BEGIN
    UPDATE search_names_docs SET
        parent_id = NEW.parent_id,
        system = NEW.system,
        live = (NEW.deleted_at IS NULL AND NEW.perm_deleted = FALSE)
    WHERE object_id = NEW.id;
END;
