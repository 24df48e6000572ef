-- Password resets by mail (`POST /rest/users/requestPasswordReset`, `.../resetPassword`): one
-- row per unused reset link. The link's token is stored only as its SHA-256 hash; a new request
-- replaces the user's earlier rows, and a reset deletes them all (single use).
CREATE TABLE password_resets (
    token_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX password_resets_user ON password_resets(user_id);
CREATE INDEX password_resets_expiry ON password_resets(expires_at);
