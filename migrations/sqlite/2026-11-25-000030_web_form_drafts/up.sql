-- Submissions in progress (docs/web-forms.md): a person filling in a web form uploads its files
-- through the public upload before sending the form. Each such submission is a draft email
-- (no mailbox entry, so it is in no one's mail) with a reference the page holds; only the
-- reference's SHA-256 is stored. The form's POST sends the draft; an abandoned one is swept
-- after `expires_at`, with the files uploaded onto it. Times are Unix seconds.
CREATE TABLE web_form_drafts (
    email_id TEXT PRIMARY KEY NOT NULL REFERENCES emails(id) ON DELETE CASCADE,
    -- No foreign key: a draft outlives its form until the sweep takes it.
    form_id TEXT NOT NULL,
    ref_hash TEXT NOT NULL,
    -- The signed-in submitter (a form with `authRequired`), or NULL for an anonymous one.
    submitter_id TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX web_form_drafts_ref ON web_form_drafts(ref_hash);
CREATE INDEX web_form_drafts_expiry ON web_form_drafts(expires_at);
