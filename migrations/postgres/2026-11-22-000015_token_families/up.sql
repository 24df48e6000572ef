-- Token families: see the SQLite migration of the same name. Who a token was issued to and
-- whether it is revoked is kept once per family; token rows keep only their key and lifetime.
CREATE TABLE token_families (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    client_id TEXT NOT NULL REFERENCES clients(id) ON DELETE CASCADE,
    device_id BIGINT REFERENCES devices(id) ON DELETE SET NULL,
    revoked BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL
);
CREATE INDEX token_families_user ON token_families(user_id);
CREATE INDEX token_families_client ON token_families(client_id);
CREATE INDEX token_families_device ON token_families(device_id);

INSERT INTO token_families (id, user_id, client_id, device_id, revoked, created_at)
SELECT family_id, MIN(user_id), MIN(client_id), MAX(device_id), BOOL_OR(revoked), MIN(created_at)
FROM (
    SELECT family_id, user_id, client_id, device_id, revoked, created_at FROM access_tokens
    UNION ALL
    SELECT family_id, user_id, client_id, device_id, revoked, created_at FROM refresh_tokens
) AS t
GROUP BY family_id;

DROP INDEX access_tokens_family;
DROP INDEX access_tokens_user;
ALTER TABLE access_tokens DROP COLUMN client_id, DROP COLUMN user_id, DROP COLUMN device_id,
    DROP COLUMN revoked;
DROP INDEX refresh_tokens_family;
DROP INDEX refresh_tokens_user;
ALTER TABLE refresh_tokens DROP COLUMN client_id, DROP COLUMN user_id, DROP COLUMN device_id,
    DROP COLUMN revoked;
