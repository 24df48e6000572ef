CREATE TABLE access_tokens_old (
    token_hash TEXT PRIMARY KEY,
    family_id TEXT NOT NULL,
    client_id TEXT NOT NULL REFERENCES clients(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    device_id BIGINT REFERENCES devices(id) ON DELETE SET NULL,
    expires_at BIGINT,
    revoked BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL
) WITHOUT ROWID;
INSERT INTO access_tokens_old
SELECT a.token_hash, a.family_id, f.client_id, f.user_id, a.scope, f.device_id, a.expires_at, f.revoked, a.created_at
FROM access_tokens a JOIN token_families f ON f.id = a.family_id;
DROP TABLE access_tokens;
ALTER TABLE access_tokens_old RENAME TO access_tokens;
CREATE INDEX access_tokens_family ON access_tokens(family_id);
CREATE INDEX access_tokens_user ON access_tokens(user_id);

CREATE TABLE refresh_tokens_old (
    token_hash TEXT PRIMARY KEY,
    family_id TEXT NOT NULL,
    client_id TEXT NOT NULL REFERENCES clients(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    device_id BIGINT REFERENCES devices(id) ON DELETE SET NULL,
    expires_at BIGINT,
    used_at BIGINT,
    revoked BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL
) WITHOUT ROWID;
INSERT INTO refresh_tokens_old
SELECT r.token_hash, r.family_id, f.client_id, f.user_id, r.scope, f.device_id, r.expires_at, r.used_at, f.revoked, r.created_at
FROM refresh_tokens r JOIN token_families f ON f.id = r.family_id;
DROP TABLE refresh_tokens;
ALTER TABLE refresh_tokens_old RENAME TO refresh_tokens;
CREATE INDEX refresh_tokens_family ON refresh_tokens(family_id);
CREATE INDEX refresh_tokens_user ON refresh_tokens(user_id);

DROP TABLE token_families;
