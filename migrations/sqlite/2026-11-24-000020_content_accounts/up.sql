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

CREATE TRIGGER objects_account_insert AFTER INSERT ON objects
BEGIN
    INSERT INTO content_accounts (owner_id, used, generation) VALUES (NEW.owner_id, 0, 1)
    ON CONFLICT (owner_id) DO UPDATE SET generation = generation + 1;
END;

CREATE TRIGGER objects_account_update AFTER UPDATE ON objects
WHEN OLD.owner_id = NEW.owner_id AND OLD.perm_deleted = NEW.perm_deleted
BEGIN
    INSERT INTO content_accounts (owner_id, used, generation) VALUES (NEW.owner_id, 0, 1)
    ON CONFLICT (owner_id) DO UPDATE SET generation = generation + 1;
END;

-- An object changing hands (a folder moved into another owner's tree) or leaving for good
-- takes its live versions' bytes with it.
CREATE TRIGGER objects_account_transfer AFTER UPDATE ON objects
WHEN OLD.owner_id <> NEW.owner_id OR OLD.perm_deleted <> NEW.perm_deleted
BEGIN
    INSERT INTO content_accounts (owner_id, used, generation)
    SELECT OLD.owner_id,
           CASE WHEN OLD.perm_deleted THEN 0 ELSE -COALESCE(SUM(size), 0) END, 1
    FROM file_versions WHERE file_id = NEW.id AND deleted = FALSE
    ON CONFLICT (owner_id) DO UPDATE
        SET used = used + excluded.used, generation = generation + 1;
    INSERT INTO content_accounts (owner_id, used, generation)
    SELECT NEW.owner_id,
           CASE WHEN NEW.perm_deleted THEN 0 ELSE COALESCE(SUM(size), 0) END, 1
    FROM file_versions WHERE file_id = NEW.id AND deleted = FALSE
    ON CONFLICT (owner_id) DO UPDATE
        SET used = used + excluded.used, generation = generation + 1;
END;

CREATE TRIGGER file_versions_account_insert AFTER INSERT ON file_versions
BEGIN
    INSERT INTO content_accounts (owner_id, used, generation)
    SELECT o.owner_id,
           CASE WHEN o.perm_deleted = FALSE AND NEW.deleted = FALSE THEN NEW.size ELSE 0 END, 1
    FROM objects o WHERE o.id = NEW.file_id
    ON CONFLICT (owner_id) DO UPDATE
        SET used = used + excluded.used, generation = generation + 1;
END;

-- Only what listings show or usage counts: a preview made for a version changes neither.
CREATE TRIGGER file_versions_account_update
AFTER UPDATE OF file_id, blob_id, size, av_status, deleted ON file_versions
BEGIN
    INSERT INTO content_accounts (owner_id, used, generation)
    SELECT o.owner_id,
           CASE WHEN o.perm_deleted = FALSE AND NEW.deleted = FALSE THEN NEW.size ELSE 0 END
           - CASE WHEN o.perm_deleted = FALSE AND OLD.deleted = FALSE THEN OLD.size ELSE 0 END, 1
    FROM objects o WHERE o.id = NEW.file_id
    ON CONFLICT (owner_id) DO UPDATE
        SET used = used + excluded.used, generation = generation + 1;
END;

CREATE TRIGGER file_versions_account_delete AFTER DELETE ON file_versions
BEGIN
    INSERT INTO content_accounts (owner_id, used, generation)
    SELECT o.owner_id,
           CASE WHEN o.perm_deleted = FALSE AND OLD.deleted = FALSE THEN -OLD.size ELSE 0 END, 1
    FROM objects o WHERE o.id = OLD.file_id
    ON CONFLICT (owner_id) DO UPDATE
        SET used = used + excluded.used, generation = generation + 1;
END;

CREATE TRIGGER object_members_account_insert AFTER INSERT ON object_members
BEGIN
    UPDATE content_accounts SET generation = generation + 1
    WHERE owner_id = (SELECT owner_id FROM objects WHERE id = NEW.object_id);
END;

CREATE TRIGGER object_members_account_update AFTER UPDATE ON object_members
BEGIN
    UPDATE content_accounts SET generation = generation + 1
    WHERE owner_id = (SELECT owner_id FROM objects WHERE id = NEW.object_id);
END;

CREATE TRIGGER object_members_account_delete AFTER DELETE ON object_members
BEGIN
    UPDATE content_accounts SET generation = generation + 1
    WHERE owner_id = (SELECT owner_id FROM objects WHERE id = OLD.object_id);
END;
