-- The activity log with fewer pages written per append, its records copied unchanged (so every
-- record written before still hashes to its hash and links to its predecessor):
-- - `activities` keyed by `seq` as SQLite's row id (`INTEGER PRIMARY KEY`): the table is then
--   its own key, where `BIGINT PRIMARY KEY` kept a second b-tree for the key.
-- - `activity_users` `WITHOUT ROWID`: the table is its key `(user_id, seq)`, where a row id
--   table kept the rows and the key apart. Its index by `seq` goes: retention deletes each
--   user's expired rows by that key instead.
-- - `activities_parent` goes: no query SQLite plans uses it (a folder's activities are read
--   through the user's key, the filter by object or parent applied to those rows), yet every
--   append wrote a page of it.
-- - `audit_chain` keeps only where the kept chain starts: an append reads the head as the last
--   record by key, so the row is no longer written by every append.
CREATE TABLE activities_keyed (
    seq INTEGER PRIMARY KEY NOT NULL,
    created_at BIGINT NOT NULL,
    event TEXT NOT NULL,
    kind TEXT NOT NULL,
    actor_id TEXT,
    object_id TEXT,
    object_kind TEXT,
    object_name TEXT,
    parent_id TEXT,
    message TEXT NOT NULL,
    successful BOOLEAN NOT NULL,
    transaction_id TEXT,
    users TEXT NOT NULL,
    data TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO activities_keyed (seq, created_at, event, kind, actor_id, object_id, object_kind,
    object_name, parent_id, message, successful, transaction_id, users, data, prev_hash, hash)
SELECT seq, created_at, event, kind, actor_id, object_id, object_kind, object_name, parent_id,
    message, successful, transaction_id, users, data, prev_hash, hash
FROM activities ORDER BY seq;
DROP TABLE activities;
ALTER TABLE activities_keyed RENAME TO activities;
CREATE INDEX activities_object ON activities(object_id, seq);

CREATE TABLE activity_users_keyed (
    user_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    direct BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, seq)
) WITHOUT ROWID;
INSERT INTO activity_users_keyed (user_id, seq, direct, created_at)
SELECT user_id, seq, direct, created_at FROM activity_users ORDER BY user_id, seq;
DROP TABLE activity_users;
ALTER TABLE activity_users_keyed RENAME TO activity_users;

CREATE TABLE audit_chain_start (
    id INTEGER PRIMARY KEY NOT NULL,
    first_seq BIGINT NOT NULL,
    first_prev TEXT NOT NULL
);
INSERT INTO audit_chain_start (id, first_seq, first_prev)
SELECT id, first_seq, first_prev FROM audit_chain;
DROP TABLE audit_chain;
ALTER TABLE audit_chain_start RENAME TO audit_chain;
