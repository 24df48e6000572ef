-- Token families. Every token issued by one sign-in, and every rotation of its refresh token,
-- belongs to one family; who it was issued to (user, client, device) and whether it is revoked
-- is kept once per family instead of on every token. A token row then has no index but its
-- key: the time-ordered key makes each insert append at the right edge of one b-tree, where
-- before every refresh also wrote into four indexes (family and user, twice) at pages spread by
-- family and user. Revoking a family, a user's or a device's tokens updates family rows.
CREATE TABLE token_families (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    client_id TEXT NOT NULL REFERENCES clients(id) ON DELETE CASCADE,
    device_id BIGINT REFERENCES devices(id) ON DELETE SET NULL,
    revoked BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL
) WITHOUT ROWID;
CREATE INDEX token_families_user ON token_families(user_id);
CREATE INDEX token_families_client ON token_families(client_id);
CREATE INDEX token_families_device ON token_families(device_id);

INSERT INTO token_families (id, user_id, client_id, device_id, revoked, created_at)
SELECT family_id, MIN(user_id), MIN(client_id), MAX(device_id), MAX(revoked), MIN(created_at)
FROM (
    SELECT family_id, user_id, client_id, device_id, revoked, created_at FROM access_tokens
    UNION ALL
    SELECT family_id, user_id, client_id, device_id, revoked, created_at FROM refresh_tokens
)
GROUP BY family_id;

CREATE TABLE access_tokens_new (
    token_hash TEXT PRIMARY KEY,
    family_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    expires_at BIGINT,
    created_at BIGINT NOT NULL
) WITHOUT ROWID;
INSERT INTO access_tokens_new (token_hash, family_id, scope, expires_at, created_at)
SELECT token_hash, family_id, scope, expires_at, created_at FROM access_tokens;
DROP TABLE access_tokens;
ALTER TABLE access_tokens_new RENAME TO access_tokens;

CREATE TABLE refresh_tokens_new (
    token_hash TEXT PRIMARY KEY,
    family_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    expires_at BIGINT,
    used_at BIGINT,
    created_at BIGINT NOT NULL
) WITHOUT ROWID;
INSERT INTO refresh_tokens_new (token_hash, family_id, scope, expires_at, used_at, created_at)
SELECT token_hash, family_id, scope, expires_at, used_at, created_at FROM refresh_tokens;
DROP TABLE refresh_tokens;
ALTER TABLE refresh_tokens_new RENAME TO refresh_tokens;
