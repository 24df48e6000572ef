-- Email messages Coffer has to send (the welcome message of a SCIM `notify` create): an outbox
-- that a mail relay reads; Coffer itself speaks no SMTP.
CREATE TABLE mail_outbox (
    id TEXT PRIMARY KEY,
    user_id TEXT REFERENCES users(id) ON DELETE CASCADE,
    to_address TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX mail_outbox_created ON mail_outbox(created_at);
