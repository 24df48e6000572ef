-- Users' SSH public keys, with which they sign in to Coffer's SFTP server. `id` is the integer
-- the interface names a key by. A deleted key is kept (the administrator's list shows it) and
-- never signs in again. A key (its SHA-256 fingerprint) is live on one account only, so that a
-- key names one SFTP user; a name is unique among one user's live keys.
CREATE TABLE ssh_keys (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    public_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    active BOOLEAN NOT NULL,
    admin_active BOOLEAN NOT NULL,
    deleted BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL,
    deleted_at BIGINT
);
CREATE UNIQUE INDEX ssh_keys_live_fingerprint ON ssh_keys(fingerprint) WHERE NOT deleted;
CREATE UNIQUE INDEX ssh_keys_live_name ON ssh_keys(user_id, name) WHERE NOT deleted;
CREATE INDEX ssh_keys_user ON ssh_keys(user_id, id);
