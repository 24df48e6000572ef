-- Search reads the full-text index by owner. A file's document is numbered within its owner's
-- range: the owner's slot (search_owners) times 2^32, plus a number within it; mail keeps the
-- numbers below 2^32 (slot 0). A search then asks FTS5 for the words within the ranges of the
-- caller and of the owners of what is shared with them (rowid ranges, which FTS5 seeks within),
-- rather than for every document of the server that holds them. What the caller may find is
-- still decided by their reach and the rule, as before: the ranges only spare work, and the
-- owner-change trigger below keeps each document in its file's owner's range.
--
-- The index is also made with a prefix index of four characters (`prefix = '4'`): the last
-- word of every query may be the start of one, and without it FTS5 merges the whole lists of
-- every word with that start before any range applies.
--
-- Every existing document is renumbered here: the index is rebuilt under its new numbers (the
-- text is copied from the old index, nothing is extracted again).
DROP TRIGGER objects_search_delete;
DROP TRIGGER emails_search_insert;
DROP TRIGGER emails_search_update;
DROP TRIGGER emails_search_delete;

-- A number per owner of indexed files (slot 0, below every one, is mail's).
CREATE TABLE search_owners (
    slot INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL UNIQUE
);
INSERT INTO search_owners (user_id)
SELECT DISTINCT o.owner_id FROM search_docs d JOIN objects o ON o.id = d.ref_id
WHERE d.kind = 'f' ORDER BY o.owner_id;

-- Documents of files that are gone have no owner: they leave with their rows.
DELETE FROM search_docs WHERE kind = 'f' AND ref_id NOT IN (SELECT id FROM objects);

CREATE TABLE search_renumber (old INTEGER PRIMARY KEY, new INTEGER NOT NULL);
INSERT INTO search_renumber (old, new)
SELECT d.id, s.slot * 4294967296 + ROW_NUMBER() OVER (PARTITION BY s.slot ORDER BY d.id)
FROM search_docs d JOIN objects o ON o.id = d.ref_id JOIN search_owners s ON s.user_id = o.owner_id
WHERE d.kind = 'f';

CREATE VIRTUAL TABLE search_fts_new USING fts5(title, body,
    tokenize = 'unicode61 remove_diacritics 2', prefix = '4');
INSERT INTO search_fts_new (rowid, title, body)
SELECT COALESCE(r.new, d.id), f.title, f.body
FROM search_docs d JOIN search_fts f ON f.rowid = d.id LEFT JOIN search_renumber r ON r.old = d.id
ORDER BY 1;
UPDATE search_docs SET id = (SELECT r.new FROM search_renumber r WHERE r.old = search_docs.id)
WHERE kind = 'f';
DROP TABLE search_renumber;
DROP TABLE search_fts;
ALTER TABLE search_fts_new RENAME TO search_fts;

-- A file's text goes with the file.
CREATE TRIGGER objects_search_delete AFTER DELETE ON objects WHEN OLD.kind = 'f'
BEGIN
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_docs WHERE kind = 'f' AND ref_id = OLD.id);
    DELETE FROM search_docs WHERE kind = 'f' AND ref_id = OLD.id;
END;

-- A file that changes owner (a folder moved into another user's tree) takes its document into
-- the new owner's range: the text moves under the next number of that range.
CREATE TRIGGER objects_search_owner AFTER UPDATE OF owner_id ON objects
WHEN OLD.kind = 'f' AND NEW.owner_id <> OLD.owner_id
    AND EXISTS (SELECT 1 FROM search_docs WHERE kind = 'f' AND ref_id = NEW.id)
BEGIN
    INSERT OR IGNORE INTO search_owners (user_id) VALUES (NEW.owner_id);
    INSERT INTO search_fts (rowid, title, body)
    SELECT (SELECT COALESCE(
                (SELECT MAX(x.id) + 1 FROM search_docs x
                 WHERE x.id >= s.slot * 4294967296 AND x.id < (s.slot + 1) * 4294967296),
                s.slot * 4294967296 + 1)
            FROM search_owners s WHERE s.user_id = NEW.owner_id),
           f.title, f.body
    FROM search_docs d JOIN search_fts f ON f.rowid = d.id WHERE d.kind = 'f' AND d.ref_id = NEW.id;
    DELETE FROM search_fts WHERE rowid = (SELECT id FROM search_docs WHERE kind = 'f' AND ref_id = NEW.id);
    UPDATE search_docs SET id = (SELECT COALESCE(
                (SELECT MAX(x.id) + 1 FROM search_docs x
                 WHERE x.id >= s.slot * 4294967296 AND x.id < (s.slot + 1) * 4294967296),
                s.slot * 4294967296 + 1)
            FROM search_owners s WHERE s.user_id = NEW.owner_id)
    WHERE kind = 'f' AND ref_id = NEW.id;
END;

-- Mail is indexed as it is written, numbered below 2^32.
CREATE TRIGGER emails_search_insert AFTER INSERT ON emails
BEGIN
    INSERT INTO search_docs (id, kind, ref_id)
    VALUES ((SELECT COALESCE(MAX(id), 0) + 1 FROM search_docs WHERE id < 4294967296), 'm', NEW.id);
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

-- Names by their parts: a trigram index of every folder's and file's folded name, numbered the
-- same way (an object's name in its owner's range), so that a search for a part of a name
-- (`query=`, `content:contains`) of three characters or more asks the index for the parts
-- within the caller's ranges instead of reading every object the caller reaches. The index
-- only proposes: the name itself is compared, and the reach and the rule decide, as before.
CREATE TABLE search_names_docs (
    id INTEGER PRIMARY KEY,
    object_id TEXT NOT NULL UNIQUE
);
CREATE VIRTUAL TABLE search_names USING fts5(name, tokenize = 'trigram');

INSERT OR IGNORE INTO search_owners (user_id)
SELECT DISTINCT owner_id FROM objects ORDER BY owner_id;
INSERT INTO search_names_docs (id, object_id)
SELECT s.slot * 4294967296 + ROW_NUMBER() OVER (PARTITION BY s.slot ORDER BY o.rowid), o.id
FROM objects o JOIN search_owners s ON s.user_id = o.owner_id;
INSERT INTO search_names (rowid, name)
SELECT n.id, o.name_folded FROM search_names_docs n JOIN objects o ON o.id = n.object_id
ORDER BY n.id;

CREATE TRIGGER objects_search_names_insert AFTER INSERT ON objects
BEGIN
    INSERT OR IGNORE INTO search_owners (user_id) VALUES (NEW.owner_id);
    INSERT INTO search_names_docs (id, object_id)
    SELECT COALESCE(
               (SELECT MAX(x.id) + 1 FROM search_names_docs x
                WHERE x.id >= s.slot * 4294967296 AND x.id < (s.slot + 1) * 4294967296),
               s.slot * 4294967296 + 1), NEW.id
    FROM search_owners s WHERE s.user_id = NEW.owner_id;
    INSERT INTO search_names (rowid, name)
    SELECT id, NEW.name_folded FROM search_names_docs WHERE object_id = NEW.id;
END;

CREATE TRIGGER objects_search_names_rename AFTER UPDATE OF name_folded ON objects
WHEN NEW.name_folded <> OLD.name_folded
BEGIN
    DELETE FROM search_names WHERE rowid = (SELECT id FROM search_names_docs WHERE object_id = NEW.id);
    INSERT INTO search_names (rowid, name)
    SELECT id, NEW.name_folded FROM search_names_docs WHERE object_id = NEW.id;
END;

CREATE TRIGGER objects_search_names_owner AFTER UPDATE OF owner_id ON objects
WHEN NEW.owner_id <> OLD.owner_id
BEGIN
    INSERT OR IGNORE INTO search_owners (user_id) VALUES (NEW.owner_id);
    DELETE FROM search_names WHERE rowid = (SELECT id FROM search_names_docs WHERE object_id = NEW.id);
    UPDATE search_names_docs SET id = (SELECT COALESCE(
                (SELECT MAX(x.id) + 1 FROM search_names_docs x
                 WHERE x.id >= s.slot * 4294967296 AND x.id < (s.slot + 1) * 4294967296),
                s.slot * 4294967296 + 1)
            FROM search_owners s WHERE s.user_id = NEW.owner_id)
    WHERE object_id = NEW.id;
    INSERT INTO search_names (rowid, name)
    SELECT id, NEW.name_folded FROM search_names_docs WHERE object_id = NEW.id;
END;

CREATE TRIGGER objects_search_names_delete AFTER DELETE ON objects
BEGIN
    DELETE FROM search_names WHERE rowid = (SELECT id FROM search_names_docs WHERE object_id = OLD.id);
    DELETE FROM search_names_docs WHERE object_id = OLD.id;
END;
