-- A user's favorite folders and files. `id` is the integer the interface names a favorite by.
-- A favorite of an object the user no longer sees (trashed, unshared) stays and is hidden by
-- the reads; one whose object is permanently deleted goes with it (trigger below).
CREATE TABLE favorites (
    id BIGSERIAL PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    object_id TEXT NOT NULL REFERENCES objects(id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX favorites_user_object ON favorites(user_id, object_id);
CREATE INDEX favorites_object ON favorites(object_id);

CREATE FUNCTION objects_purge_favorites() RETURNS trigger AS $$
BEGIN
    DELETE FROM favorites WHERE object_id = NEW.id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER objects_purge_favorites AFTER UPDATE OF perm_deleted ON objects
    FOR EACH ROW WHEN (NEW.perm_deleted AND NOT OLD.perm_deleted)
    EXECUTE FUNCTION objects_purge_favorites();

-- Folder listings show `isFavorite`: a change of favorites moves the object owner's content
-- generation on, as every other change a listing shows does (migration 000020).
CREATE FUNCTION favorites_generation() RETURNS trigger AS $$
DECLARE
    obj TEXT;
BEGIN
    IF TG_OP = 'INSERT' THEN
        obj := NEW.object_id;
    ELSE
        obj := OLD.object_id;
    END IF;
    UPDATE content_accounts SET generation = generation + 1
    WHERE owner_id = (SELECT owner_id FROM objects WHERE id = obj);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER favorites_generation AFTER INSERT OR DELETE ON favorites
    FOR EACH ROW EXECUTE FUNCTION favorites_generation();
