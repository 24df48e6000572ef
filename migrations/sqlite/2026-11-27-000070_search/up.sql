-- Search. Names, descriptions and paths are searched where they live (objects, emails); the
-- text inside files and the subjects and bodies of mail are kept in a full-text index.
--
-- search_texts: the extraction state of each file's current version. A new version makes its
-- file `pending` and queues a `search-extract` job (trigger below), so the content core needs to
-- know nothing of search. `indexed` holds text in the index; `failed` was recorded with its
-- reason (a file that is no document, a damaged one, one over the limits) and is retried by
-- `cofferd search reindex`; `skipped` is a type that holds no text (images, video, archives).
CREATE TABLE search_texts (
    file_id TEXT PRIMARY KEY REFERENCES objects(id) ON DELETE CASCADE,
    version_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'indexed', 'failed', 'skipped')),
    error TEXT,
    attempts BIGINT NOT NULL DEFAULT 0,
    text_bytes BIGINT NOT NULL DEFAULT 0,
    updated_at BIGINT NOT NULL
);
CREATE INDEX search_texts_state ON search_texts(state);

-- One indexed document: the text of a file (`kind` 'f', `ref_id` the file's id) or an email
-- ('m', the email's id). Its `id` is the row of the full-text table.
CREATE TABLE search_docs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('f', 'm')),
    ref_id TEXT NOT NULL
);
CREATE UNIQUE INDEX search_docs_ref ON search_docs(kind, ref_id);

-- The full-text index (FTS5): `title` is an email's subject (empty for a file, whose name is
-- searched in objects), `body` the text. Diacritics are folded, so "resume" finds "résumé".
CREATE VIRTUAL TABLE search_fts USING fts5(title, body, tokenize = 'unicode61 remove_diacritics 2');

CREATE TRIGGER file_versions_search AFTER INSERT ON file_versions
BEGIN
    INSERT INTO search_texts (file_id, version_id, state, error, attempts, text_bytes, updated_at)
    VALUES (NEW.file_id, NEW.id, 'pending', NULL, 0, 0, NEW.created_at)
    ON CONFLICT (file_id) DO UPDATE SET version_id = excluded.version_id, state = 'pending',
        error = NULL, attempts = 0, updated_at = excluded.updated_at;
    INSERT INTO jobs (kind, payload, state, attempts, max_attempts, run_at, created_at, updated_at)
    VALUES ('search-extract', NEW.file_id, 'queued', 0, 5, NEW.created_at, NEW.created_at,
            NEW.created_at);
END;

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

-- What is already stored: every email indexed, every file's current version pending.
INSERT INTO search_docs (kind, ref_id) SELECT 'm', id FROM emails;
INSERT INTO search_fts (rowid, title, body)
SELECT d.id, e.subject, e.body FROM search_docs d JOIN emails e ON e.id = d.ref_id WHERE d.kind = 'm';
INSERT INTO search_texts (file_id, version_id, state, error, attempts, text_bytes, updated_at)
SELECT o.id, o.current_version_id, 'pending', NULL, 0, 0, o.modified_at FROM objects o
WHERE o.kind = 'f' AND o.current_version_id IS NOT NULL;
INSERT INTO jobs (kind, payload, state, attempts, max_attempts, run_at, created_at, updated_at)
SELECT 'search-extract', file_id, 'queued', 0, 5, updated_at, updated_at, updated_at FROM search_texts;
