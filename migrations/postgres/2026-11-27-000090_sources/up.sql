-- External sources a user connected (WebDAV): the address, the type, the credentials encrypted
-- with the server's secret key (AES-256-GCM; the nonce before the ciphertext, the source's id as
-- associated data; the key itself is never stored here), and whether the remote refused them
-- last time (`needs_auth`: calls answer ERR_AUTH_EC_UPDATE_TOKEN until new ones are given).
-- The directories the operator exposes come from the configuration and are not stored. A name
-- (without regard to case) and an address are unique per user.
CREATE TABLE sources (
    id TEXT PRIMARY KEY NOT NULL,
    owner_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    name_folded TEXT NOT NULL,
    description TEXT NOT NULL,
    url TEXT NOT NULL,
    type_id BIGINT NOT NULL,
    credentials BYTEA,
    needs_auth BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX sources_owner_name ON sources(owner_id, name_folded);
CREATE UNIQUE INDEX sources_owner_url ON sources(owner_id, url);

-- The sources a user pinned. `source_id` names a stored source or an operator directory
-- (`dir-<name>`), so it has no foreign key; deleting a source deletes its pins.
CREATE TABLE source_pins (
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    source_id TEXT NOT NULL,
    pinned_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, source_id)
);

-- Coffer's locks on remote files: one per file of a source, held by one user, with the
-- remote's own lock token when the server granted one (WebDAV LOCK).
CREATE TABLE source_locks (
    id BIGSERIAL PRIMARY KEY,
    source_id TEXT NOT NULL,
    path TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    remote_token TEXT,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX source_locks_path ON source_locks(source_id, path);

-- Transfers between a source and Coffer: `direction` 'in' (a remote file into Coffer) or 'out'
-- (a file written to the remote); `state` 0 received, 1 in progress, 2 completed, 99 failed
-- with `err_code` (1 auth, 2 not found, 3 too large, 4 remote error, 5 scan refused);
-- `object_id` the Coffer file a completed transfer in made.
CREATE TABLE source_transfers (
    id TEXT PRIMARY KEY NOT NULL,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    source_id TEXT NOT NULL,
    path TEXT NOT NULL,
    direction TEXT NOT NULL,
    state BIGINT NOT NULL,
    err_code BIGINT,
    object_id TEXT,
    folder_id TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX source_transfers_user ON source_transfers(user_id, created_at);
