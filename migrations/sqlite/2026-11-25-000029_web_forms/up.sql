-- Web forms (docs/web-forms.md). Times are Unix seconds.

-- A form an operator defines (`cofferd webform create`); its submissions arrive as emails in
-- the owner's inbox (a user, or a shared mailbox's user). `fields` is a JSON array of field
-- definitions; `profiles` a JSON array of profile ids allowed to use the form (empty: every
-- profile). `name_folded` is the lowercase name, for the `name` filters.
CREATE TABLE web_forms (
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL,
    name_folded TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    owner_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    active BOOLEAN NOT NULL DEFAULT TRUE,
    auth_required BOOLEAN NOT NULL DEFAULT FALSE,
    embedded BOOLEAN NOT NULL DEFAULT FALSE,
    standalone BOOLEAN NOT NULL DEFAULT TRUE,
    fields TEXT NOT NULL,
    profiles TEXT NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    modified_at BIGINT NOT NULL
);
CREATE INDEX web_forms_owner ON web_forms(owner_id);
