-- Two-factor authentication with TOTP (RFC 6238). The secret is kept as given: verifying a code
-- needs it. The last used step refuses a code's replay. Remembered browsers skip the challenge.
ALTER TABLE users ADD COLUMN totp_secret TEXT;
ALTER TABLE users ADD COLUMN totp_enabled BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE users ADD COLUMN totp_last_step BIGINT;

CREATE TABLE remembered_devices (
    token_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    expires_at BIGINT NOT NULL
);
