-- Request-file links (docs/request-files.md). Times are Unix seconds.

-- One link per recipient of a request. The request itself is an email (`email_id`: subject,
-- body, who asked) whose recipient at `position` the link is for, so that an outside recipient
-- proves the address with the codes and sessions of mail (`mail_access_*`). `kind` is `folder`
-- (the files land in `folder_id`) or `inbox` (they wait in the requestor's system folder and go
-- to the requestor's, or `shared_mailbox_id`'s, inbox as one email: `reply_email_id`). The
-- reference is kept only as its SHA-256 (`ref_hash`). `expire_at` is the last second the link
-- works; `withdrawn_at` is set when the requestor withdraws it.
CREATE TABLE request_files (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ref_hash TEXT NOT NULL UNIQUE,
    email_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('folder', 'inbox')),
    requestor_id TEXT NOT NULL REFERENCES users(id),
    actor_id TEXT NOT NULL REFERENCES users(id),
    folder_id TEXT REFERENCES objects(id) ON DELETE SET NULL,
    shared_mailbox_id TEXT,
    recipient TEXT NOT NULL,
    recipient_user_id TEXT REFERENCES users(id),
    file_limit BIGINT NOT NULL,
    require_auth BOOLEAN NOT NULL,
    action_id BIGINT NOT NULL,
    expire_at BIGINT NOT NULL,
    withdrawn_at BIGINT,
    reply_email_id TEXT,
    created_at BIGINT NOT NULL,
    FOREIGN KEY (email_id, position) REFERENCES email_recipients(email_id, position) ON DELETE CASCADE
);
CREATE INDEX request_files_email ON request_files(email_id);
CREATE INDEX request_files_requestor ON request_files(requestor_id);

-- The files the requestor offers with a link, to view or (`action_id` 2) to download too.
CREATE TABLE request_file_sources (
    request_file_id BIGINT NOT NULL REFERENCES request_files(id) ON DELETE CASCADE,
    file_id TEXT NOT NULL REFERENCES objects(id) ON DELETE CASCADE,
    PRIMARY KEY (request_file_id, file_id)
);

-- What arrived through a link: one row per upload (a new file, or a new version of one the
-- recipient sent before under the same name). `name` is the name the recipient gave.
CREATE TABLE request_file_uploads (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_file_id BIGINT NOT NULL REFERENCES request_files(id) ON DELETE CASCADE,
    file_id TEXT NOT NULL REFERENCES objects(id) ON DELETE CASCADE,
    version_id TEXT NOT NULL,
    name TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX request_file_uploads_link ON request_file_uploads(request_file_id, file_id);
