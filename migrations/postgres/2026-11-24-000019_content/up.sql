-- The content core: folders and files in one table, their versions, the blobs those share, folder
-- members, chunked upload sessions, comments and the job queue. Times are Unix seconds.

-- Stored content, addressed by its SHA3-256 (hex). Versions (and later mail attachments) refer
-- to a blob; `refs` counts them. A blob no one refers to is freed by the storage sweep.
CREATE TABLE blobs (
    id TEXT PRIMARY KEY NOT NULL,
    size BIGINT NOT NULL,
    md5 TEXT NOT NULL,
    refs BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    unreferenced_at BIGINT
);
CREATE INDEX blobs_unreferenced ON blobs(unreferenced_at) WHERE unreferenced_at IS NOT NULL;

-- Folders (kind 'd') and files (kind 'f'). `system` marks a user's three system folders:
-- 'base' (the root of their tree), 'sync' ("My Folder"), 'my' (mail attachments). Names are
-- unique per parent without regard to case among objects not in the trash. A deleted object and
-- everything under it carry `deleted_at`; `trashed_with` names the object whose deletion put
-- them there, so that recovering it brings back exactly that subtree.
CREATE TABLE objects (
    id TEXT PRIMARY KEY NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('d', 'f')),
    parent_id TEXT REFERENCES objects(id),
    owner_id TEXT NOT NULL REFERENCES users(id),
    system TEXT CHECK (system IN ('base', 'sync', 'my')),
    name TEXT NOT NULL,
    name_folded TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    modified_at BIGINT NOT NULL,
    creator_id TEXT NOT NULL,
    modifier_id TEXT NOT NULL,
    expire_at BIGINT,
    deleted_at BIGINT,
    trashed_with TEXT,
    perm_deleted BOOLEAN NOT NULL DEFAULT FALSE,
    secure BOOLEAN NOT NULL DEFAULT FALSE,
    syncable BOOLEAN NOT NULL DEFAULT FALSE,
    file_lifetime BIGINT NOT NULL DEFAULT 0,
    current_version_id TEXT,
    size BIGINT NOT NULL DEFAULT 0,
    mime TEXT,
    client_created_at BIGINT,
    client_modified_at BIGINT
);
CREATE UNIQUE INDEX objects_live_name ON objects(parent_id, name_folded)
    WHERE deleted_at IS NULL AND parent_id IS NOT NULL;
CREATE INDEX objects_parent ON objects(parent_id, kind, name_folded);
CREATE INDEX objects_owner ON objects(owner_id, kind);
CREATE INDEX objects_trashed_with ON objects(trashed_with) WHERE trashed_with IS NOT NULL;

-- The versions of a file; the file's `current_version_id` names the one it shows.
CREATE TABLE file_versions (
    id TEXT PRIMARY KEY NOT NULL,
    file_id TEXT NOT NULL REFERENCES objects(id) ON DELETE CASCADE,
    number BIGINT NOT NULL,
    blob_id TEXT NOT NULL REFERENCES blobs(id),
    name TEXT NOT NULL,
    size BIGINT NOT NULL,
    mime TEXT NOT NULL,
    creator_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    client_created_at BIGINT,
    client_modified_at BIGINT,
    av_status TEXT NOT NULL DEFAULT 'allowed' CHECK (av_status IN ('allowed', 'scanning', 'disallowed')),
    av_signature TEXT,
    preview_status TEXT NOT NULL DEFAULT 'pending',
    preview_blob_id TEXT REFERENCES blobs(id),
    deleted BOOLEAN NOT NULL DEFAULT FALSE,
    UNIQUE (file_id, number)
);
CREATE INDEX file_versions_blob ON file_versions(blob_id);

-- Who may reach a folder (or a file) besides its owner, with which role; inherited downwards.
CREATE TABLE object_members (
    object_id TEXT NOT NULL REFERENCES objects(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id),
    role_id BIGINT NOT NULL,
    shared_by TEXT NOT NULL,
    notify_file_added BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (object_id, user_id)
);
CREATE INDEX object_members_user ON object_members(user_id);

-- Chunked upload sessions. `staging` is the session's name in the blob store's staging area.
-- Either `folder_id` (a new file, or a new version of a same-name file) or `file_id` (a new
-- version of that file) is set. `result_file_id` is set once the last chunk completed it.
CREATE TABLE uploads (
    id BIGSERIAL PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    folder_id TEXT REFERENCES objects(id) ON DELETE CASCADE,
    file_id TEXT REFERENCES objects(id) ON DELETE CASCADE,
    filename TEXT NOT NULL,
    staging TEXT NOT NULL UNIQUE,
    total_size BIGINT,
    total_chunks BIGINT,
    uploaded_chunks BIGINT NOT NULL DEFAULT 0,
    uploaded_size BIGINT NOT NULL DEFAULT 0,
    client_created_at BIGINT,
    client_modified_at BIGINT,
    disable_auto_version BOOLEAN NOT NULL DEFAULT FALSE,
    tracking_id TEXT,
    result_file_id TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX uploads_user ON uploads(user_id, id);
CREATE INDEX uploads_expires ON uploads(expires_at);

CREATE TABLE comments (
    id BIGSERIAL PRIMARY KEY,
    object_id TEXT NOT NULL REFERENCES objects(id) ON DELETE CASCADE,
    parent_id BIGINT,
    user_id TEXT NOT NULL REFERENCES users(id),
    contents TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    modified_at BIGINT NOT NULL,
    deleted BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX comments_object ON comments(object_id, id);

-- Background work. A job is claimed by setting `state = 'running'` with a lease; a job whose
-- lease ran out (its node died) is claimed again. Failures are retried with backoff up to
-- `max_attempts`, then kept as 'failed' with the last error.
CREATE TABLE jobs (
    id BIGSERIAL PRIMARY KEY,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
    attempts BIGINT NOT NULL DEFAULT 0,
    max_attempts BIGINT NOT NULL DEFAULT 5,
    run_at BIGINT NOT NULL,
    lease_until BIGINT,
    locked_by TEXT,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX jobs_due ON jobs(state, run_at);

-- The three system folders of every existing account, under the ids its record carries.
INSERT INTO objects (id, kind, parent_id, owner_id, system, name, name_folded, created_at,
                     modified_at, creator_id, modifier_id)
SELECT basedir_id, 'd', NULL, id, 'base', '', '', created_at, created_at, id, id FROM users;
INSERT INTO objects (id, kind, parent_id, owner_id, system, name, name_folded, created_at,
                     modified_at, creator_id, modifier_id, syncable)
SELECT syncdir_id, 'd', basedir_id, id, 'sync', 'My Folder', 'my folder', created_at, created_at, id, id, TRUE FROM users;
INSERT INTO objects (id, kind, parent_id, owner_id, system, name, name_folded, created_at,
                     modified_at, creator_id, modifier_id)
SELECT mydir_id, 'd', basedir_id, id, 'my', 'My Files', 'my files', created_at, created_at, id, id FROM users;
