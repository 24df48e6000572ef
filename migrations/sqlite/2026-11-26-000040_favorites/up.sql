-- A user's favorite folders and files. `id` is the integer the interface names a favorite by.
-- A favorite of an object the user no longer sees (trashed, unshared) stays and is hidden by
-- the reads; one whose object is permanently deleted goes with it (trigger below).
CREATE TABLE favorites (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    object_id TEXT NOT NULL REFERENCES objects(id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX favorites_user_object ON favorites(user_id, object_id);
CREATE INDEX favorites_object ON favorites(object_id);

CREATE TRIGGER objects_purge_favorites AFTER UPDATE OF perm_deleted ON objects
WHEN NEW.perm_deleted AND NOT OLD.perm_deleted
BEGIN
    DELETE FROM favorites WHERE object_id = NEW.id;
END;

-- Folder listings show `isFavorite`: a change of favorites moves the object owner's content
-- generation on, as every other change a listing shows does (migration 000020).
CREATE TRIGGER favorites_generation_insert AFTER INSERT ON favorites
BEGIN
    UPDATE content_accounts SET generation = generation + 1
    WHERE owner_id = (SELECT owner_id FROM objects WHERE id = NEW.object_id);
END;

CREATE TRIGGER favorites_generation_delete AFTER DELETE ON favorites
BEGIN
    UPDATE content_accounts SET generation = generation + 1
    WHERE owner_id = (SELECT owner_id FROM objects WHERE id = OLD.object_id);
END;
