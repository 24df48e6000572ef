-- SMS two-factor sign-in. A user who chose it gets one-time codes at their verified mobile number.
CREATE TABLE sms_two_factor (
    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    enabled_at BIGINT NOT NULL
);

-- The current one-time code of a user (at most one: a new code replaces the previous one). Only a
-- salted hash is kept; a used or voided code has no hash. `sent_at` limits how often codes are sent.
CREATE TABLE sms_codes (
    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    purpose TEXT NOT NULL,
    to_number TEXT NOT NULL,
    code_salt TEXT NOT NULL,
    code_hash TEXT,
    attempts INTEGER NOT NULL,
    sent_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
