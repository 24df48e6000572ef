-- Secure mail (docs/mail.md). Times are Unix seconds.

-- An email: whose mail it is (`sender_id`: a user, or a shared mailbox's user), who wrote it
-- (`actor_id`: the same user, or the member acting for the mailbox), its state
-- (`draft` → `queued` → `sent` or `error`; `self_send` when the sender is its only recipient),
-- the access level of its links (`acl`) and when they stop working (`expire_at`).
-- `web_form_fields` is a JSON object (a web-form submission).
CREATE TABLE emails (
    id TEXT PRIMARY KEY NOT NULL,
    sender_id TEXT NOT NULL REFERENCES users(id),
    actor_id TEXT NOT NULL REFERENCES users(id),
    status TEXT NOT NULL CHECK (status IN ('draft', 'queued', 'sent', 'error', 'self_send')),
    kind TEXT NOT NULL DEFAULT 'original',
    subject TEXT NOT NULL DEFAULT '',
    body TEXT NOT NULL DEFAULT '',
    acl TEXT NOT NULL,
    secure_body BOOLEAN NOT NULL DEFAULT FALSE,
    self_copy BOOLEAN NOT NULL DEFAULT FALSE,
    include_fingerprint BOOLEAN NOT NULL DEFAULT FALSE,
    expire_at BIGINT,
    parent_email_id TEXT,
    web_form_id TEXT,
    web_form_fields TEXT,
    error TEXT,
    created_at BIGINT NOT NULL,
    modified_at BIGINT NOT NULL,
    sent_at BIGINT,
    withdrawn_at BIGINT
);
CREATE INDEX emails_sender ON emails(sender_id, created_at);

-- The recipients in the order given; `kind` 0 to, 1 cc, 2 bcc. `user_id` is set for an address
-- that is an account (the mail reaches its inbox); an outside address gets a link whose
-- reference is kept only as its SHA-256 (`ref_hash`).
CREATE TABLE email_recipients (
    email_id TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    kind INTEGER NOT NULL CHECK (kind IN (0, 1, 2)),
    address TEXT NOT NULL,
    user_id TEXT REFERENCES users(id),
    ref_hash TEXT,
    PRIMARY KEY (email_id, position)
);
CREATE UNIQUE INDEX email_recipients_ref ON email_recipients(ref_hash) WHERE ref_hash IS NOT NULL;
CREATE INDEX email_recipients_user ON email_recipients(user_id) WHERE user_id IS NOT NULL;

-- The files of an email: a stored version each (no copy of the bytes; the blob counts the
-- attachment as a reference, so the bytes stay while the email does). `file_id`/`version_id`
-- name where it was taken from (they may go later).
CREATE TABLE email_attachments (
    id TEXT PRIMARY KEY NOT NULL,
    email_id TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    file_id TEXT NOT NULL,
    version_id TEXT NOT NULL,
    blob_id TEXT NOT NULL REFERENCES blobs(id),
    name TEXT NOT NULL,
    size BIGINT NOT NULL,
    mime TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    withdrawn BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX email_attachments_email ON email_attachments(email_id, position);

-- Who sees an email in which bucket: the sender's entry (`role` 's': draft, outgoing or sent
-- by the email's state) and each recipient's (`role` 'r': inbox). A trashed entry shows in the
-- trash bucket instead. Read state is per entry.
CREATE TABLE mailbox_entries (
    user_id TEXT NOT NULL REFERENCES users(id),
    email_id TEXT NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('s', 'r')),
    bucket TEXT NOT NULL CHECK (bucket IN ('inbox', 'draft', 'outgoing', 'sent')),
    is_read BOOLEAN NOT NULL DEFAULT FALSE,
    trashed_at BIGINT,
    created_at BIGINT NOT NULL,
    modified_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, email_id, role)
);
CREATE INDEX mailbox_entries_bucket ON mailbox_entries(user_id, bucket, created_at);
CREATE INDEX mailbox_entries_email ON mailbox_entries(email_id);

-- The message to an outside recipient names its email, so that the email's state follows
-- delivery; an upload opened on a draft names the draft it attaches to.
ALTER TABLE mail_outbox ADD COLUMN email_id TEXT;
CREATE INDEX mail_outbox_email ON mail_outbox(email_id) WHERE email_id IS NOT NULL;
ALTER TABLE uploads ADD COLUMN email_id TEXT;
