-- One row per owner of content: the bytes their live versions hold (`used`, what the quota
-- counts) and a `generation` that every change in their trees moves on (a folder listing
-- rendered at one generation stays true while it does not change). Triggers keep both, so every
-- path that writes content (REST, uploads, jobs, and the areas built later) counts alike, in
-- the transaction of the change.
CREATE TABLE content_accounts (
    owner_id TEXT PRIMARY KEY NOT NULL,
    used BIGINT NOT NULL DEFAULT 0,
    generation BIGINT NOT NULL DEFAULT 0
);

INSERT INTO content_accounts (owner_id, used, generation)
SELECT o.owner_id,
       COALESCE(SUM(CASE WHEN o.perm_deleted = FALSE AND v.deleted = FALSE THEN v.size END), 0),
       1
FROM objects o LEFT JOIN file_versions v ON v.file_id = o.id
GROUP BY o.owner_id;

CREATE FUNCTION content_account_add(owner TEXT, delta BIGINT) RETURNS void AS $$
    INSERT INTO content_accounts (owner_id, used, generation) VALUES (owner, delta, 1)
    ON CONFLICT (owner_id) DO UPDATE
        SET used = content_accounts.used + EXCLUDED.used,
            generation = content_accounts.generation + 1;
$$ LANGUAGE sql;

CREATE FUNCTION objects_account() RETURNS trigger AS $$
DECLARE
    live BIGINT;
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM content_account_add(NEW.owner_id, 0);
    ELSIF OLD.owner_id = NEW.owner_id AND OLD.perm_deleted = NEW.perm_deleted THEN
        PERFORM content_account_add(NEW.owner_id, 0);
    ELSE
        -- Changing hands, or leaving for good: the live versions' bytes go with the object.
        SELECT COALESCE(SUM(size), 0) INTO live FROM file_versions
        WHERE file_id = NEW.id AND deleted = FALSE;
        PERFORM content_account_add(OLD.owner_id, CASE WHEN OLD.perm_deleted THEN 0 ELSE -live END);
        PERFORM content_account_add(NEW.owner_id, CASE WHEN NEW.perm_deleted THEN 0 ELSE live END);
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER objects_account AFTER INSERT OR UPDATE ON objects
    FOR EACH ROW EXECUTE FUNCTION objects_account();

CREATE FUNCTION file_versions_account() RETURNS trigger AS $$
DECLARE
    owner TEXT;
    gone BOOLEAN;
    delta BIGINT := 0;
BEGIN
    SELECT owner_id, perm_deleted INTO owner, gone FROM objects
    WHERE id = CASE WHEN TG_OP = 'DELETE' THEN OLD.file_id ELSE NEW.file_id END;
    IF owner IS NULL THEN
        RETURN NULL;
    END IF;
    IF NOT gone THEN
        IF TG_OP <> 'DELETE' AND NOT NEW.deleted THEN
            delta := delta + NEW.size;
        END IF;
        IF TG_OP <> 'INSERT' AND NOT OLD.deleted THEN
            delta := delta - OLD.size;
        END IF;
    END IF;
    PERFORM content_account_add(owner, delta);
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

-- Updates only of what listings show or usage counts: a preview made for a version changes
-- neither.
CREATE TRIGGER file_versions_account
    AFTER INSERT OR UPDATE OF file_id, blob_id, size, av_status, deleted OR DELETE ON file_versions
    FOR EACH ROW EXECUTE FUNCTION file_versions_account();

CREATE FUNCTION object_members_account() RETURNS trigger AS $$
BEGIN
    UPDATE content_accounts SET generation = generation + 1
    WHERE owner_id = (SELECT owner_id FROM objects
                      WHERE id = CASE WHEN TG_OP = 'DELETE' THEN OLD.object_id
                                      ELSE NEW.object_id END);
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER object_members_account AFTER INSERT OR UPDATE OR DELETE ON object_members
    FOR EACH ROW EXECUTE FUNCTION object_members_account();
