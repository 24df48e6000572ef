ALTER TABLE access_tokens
    ADD COLUMN client_id TEXT REFERENCES clients(id) ON DELETE CASCADE,
    ADD COLUMN user_id TEXT REFERENCES users(id) ON DELETE CASCADE,
    ADD COLUMN device_id BIGINT REFERENCES devices(id) ON DELETE SET NULL,
    ADD COLUMN revoked BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE access_tokens a SET client_id = f.client_id, user_id = f.user_id,
    device_id = f.device_id, revoked = f.revoked
FROM token_families f WHERE f.id = a.family_id;
DELETE FROM access_tokens WHERE user_id IS NULL;
ALTER TABLE access_tokens ALTER COLUMN client_id SET NOT NULL, ALTER COLUMN user_id SET NOT NULL;
CREATE INDEX access_tokens_family ON access_tokens(family_id);
CREATE INDEX access_tokens_user ON access_tokens(user_id);

ALTER TABLE refresh_tokens
    ADD COLUMN client_id TEXT REFERENCES clients(id) ON DELETE CASCADE,
    ADD COLUMN user_id TEXT REFERENCES users(id) ON DELETE CASCADE,
    ADD COLUMN device_id BIGINT REFERENCES devices(id) ON DELETE SET NULL,
    ADD COLUMN revoked BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE refresh_tokens r SET client_id = f.client_id, user_id = f.user_id,
    device_id = f.device_id, revoked = f.revoked
FROM token_families f WHERE f.id = r.family_id;
DELETE FROM refresh_tokens WHERE user_id IS NULL;
ALTER TABLE refresh_tokens ALTER COLUMN client_id SET NOT NULL, ALTER COLUMN user_id SET NOT NULL;
CREATE INDEX refresh_tokens_family ON refresh_tokens(family_id);
CREATE INDEX refresh_tokens_user ON refresh_tokens(user_id);

DROP TABLE token_families;
