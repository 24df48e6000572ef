-- The settings a user keeps for themself (`PUT /rest/users/{id}/settings`) beyond the language
-- and location, which `users` holds already: the mail signature and the mobile key store. One
-- row per user who has set either; none means both empty.
CREATE TABLE user_settings (
    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    signature TEXT NOT NULL DEFAULT '',
    mobile_key_store TEXT NOT NULL DEFAULT '',
    updated_at BIGINT NOT NULL
);
