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
-- ('m', the email's id), with its `tsvector` (the 'simple' configuration: words as written,
-- lower-cased, no stemming, as SQLite's tokenizer) under a GIN index. `title` is an email's
-- subject (empty for a file, whose name is searched in objects).
CREATE TABLE search_docs (
    id BIGSERIAL PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('f', 'm')),
    ref_id TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    body TEXT NOT NULL DEFAULT '',
    tsv tsvector NOT NULL
);
CREATE UNIQUE INDEX search_docs_ref ON search_docs(kind, ref_id);
CREATE INDEX search_docs_tsv ON search_docs USING GIN (tsv);

CREATE FUNCTION search_tsv(title TEXT, body TEXT) RETURNS tsvector AS $$
    SELECT setweight(to_tsvector('simple', coalesce(title, '')), 'A')
        || setweight(to_tsvector('simple', coalesce(body, '')), 'D');
$$ LANGUAGE sql IMMUTABLE;

CREATE FUNCTION file_versions_search() RETURNS trigger AS $$
BEGIN
    INSERT INTO search_texts (file_id, version_id, state, error, attempts, text_bytes, updated_at)
    VALUES (NEW.file_id, NEW.id, 'pending', NULL, 0, 0, NEW.created_at)
    ON CONFLICT (file_id) DO UPDATE SET version_id = excluded.version_id, state = 'pending',
        error = NULL, attempts = 0, updated_at = excluded.updated_at;
    INSERT INTO jobs (kind, payload, state, attempts, max_attempts, run_at, created_at, updated_at)
    VALUES ('search-extract', NEW.file_id, 'queued', 0, 5, NEW.created_at, NEW.created_at,
            NEW.created_at);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER file_versions_search AFTER INSERT ON file_versions
    FOR EACH ROW EXECUTE FUNCTION file_versions_search();

-- A file's text goes with the file.
CREATE FUNCTION objects_search_delete() RETURNS trigger AS $$
BEGIN
    DELETE FROM search_docs WHERE kind = 'f' AND ref_id = OLD.id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER objects_search_delete AFTER DELETE ON objects
    FOR EACH ROW WHEN (OLD.kind = 'f') EXECUTE FUNCTION objects_search_delete();

-- Mail is indexed as it is written: subject and body, kept in step with the email.
CREATE FUNCTION emails_search() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM search_docs WHERE kind = 'm' AND ref_id = OLD.id;
        RETURN NULL;
    END IF;
    INSERT INTO search_docs (kind, ref_id, title, body, tsv)
    VALUES ('m', NEW.id, NEW.subject, NEW.body, search_tsv(NEW.subject, NEW.body))
    ON CONFLICT (kind, ref_id) DO UPDATE SET title = excluded.title, body = excluded.body,
        tsv = excluded.tsv;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER emails_search_insert AFTER INSERT ON emails
    FOR EACH ROW EXECUTE FUNCTION emails_search();
CREATE TRIGGER emails_search_update AFTER UPDATE OF subject, body ON emails
    FOR EACH ROW EXECUTE FUNCTION emails_search();
CREATE TRIGGER emails_search_delete AFTER DELETE ON emails
    FOR EACH ROW EXECUTE FUNCTION emails_search();

-- What is already stored: every email indexed, every file's current version pending.
INSERT INTO search_docs (kind, ref_id, title, body, tsv)
SELECT 'm', id, subject, body, search_tsv(subject, body) FROM emails;
INSERT INTO search_texts (file_id, version_id, state, error, attempts, text_bytes, updated_at)
SELECT o.id, o.current_version_id, 'pending', NULL, 0, 0, o.modified_at FROM objects o
WHERE o.kind = 'f' AND o.current_version_id IS NOT NULL;
INSERT INTO jobs (kind, payload, state, attempts, max_attempts, run_at, created_at, updated_at)
SELECT 'search-extract', file_id, 'queued', 0, 5, updated_at, updated_at, updated_at FROM search_texts;
