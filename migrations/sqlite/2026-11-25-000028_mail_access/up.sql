-- What outside recipients of mail use to open it (docs/mail.md, "Outside recipients"). Times are
-- Unix seconds.

-- The one-time code a recipient asked for to prove the address: one per recipient (a new one
-- replaces it), kept only as a salted SHA-256, valid until `expire_at`, void after a few wrong
-- tries (`attempts`).
CREATE TABLE mail_access_codes (
    email_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    code_salt TEXT NOT NULL,
    code_hash TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    expire_at BIGINT NOT NULL,
    PRIMARY KEY (email_id, position),
    FOREIGN KEY (email_id, position) REFERENCES email_recipients(email_id, position) ON DELETE CASCADE
);

-- A short web session a correct code opened: the cookie's token kept only as its SHA-256,
-- bound to one recipient of one email.
CREATE TABLE mail_access_sessions (
    token_hash TEXT PRIMARY KEY NOT NULL,
    email_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    created_at BIGINT NOT NULL,
    expire_at BIGINT NOT NULL,
    FOREIGN KEY (email_id, position) REFERENCES email_recipients(email_id, position) ON DELETE CASCADE
);
CREATE INDEX mail_access_sessions_recipient ON mail_access_sessions(email_id, position);
