-- SCIM provisioning: a user's SCIM `userName` (the email unless an identity provider names the
-- account otherwise; unique without regard to case), the identity provider's `externalId`, and
-- the preferred language (a language tag).
ALTER TABLE users ADD COLUMN user_name TEXT;
ALTER TABLE users ADD COLUMN external_id TEXT;
ALTER TABLE users ADD COLUMN preferred_language TEXT;
UPDATE users SET user_name = email;
CREATE UNIQUE INDEX users_user_name_lower ON users (lower(user_name));
CREATE INDEX users_external_id ON users (external_id);
CREATE INDEX users_created ON users (created_at, id);
