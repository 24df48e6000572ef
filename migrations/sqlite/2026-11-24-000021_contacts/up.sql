-- Contacts and external distribution lists. Times are Unix seconds.

-- A user's contacts: a name (unique per owner without regard to case: `name_folded`) and one or
-- more addresses (`contact_items`). `last_contact_at` is set by mail and file requests sent to
-- one of the addresses; NULL until then.
CREATE TABLE contacts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    name_folded TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    modified_at BIGINT NOT NULL,
    last_contact_at BIGINT
);
CREATE UNIQUE INDEX contacts_user_name ON contacts(user_id, name_folded);

-- The addresses of a contact, lower-cased, in the order given. `user_id` repeats the owner so
-- that finding a user's contacts by address (when mail is sent) is one index lookup.
CREATE TABLE contact_items (
    contact_id BIGINT NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    email TEXT NOT NULL,
    PRIMARY KEY (contact_id, position),
    UNIQUE (contact_id, email)
);
CREATE INDEX contact_items_user_email ON contact_items(user_id, email);

-- The organisation's external distribution lists: addresses of mailing lists outside Coffer.
-- Such an address cannot become an account, and contacts and recipients show it as a list.
CREATE TABLE external_dls (
    email TEXT PRIMARY KEY NOT NULL,
    created_by TEXT,
    created_at BIGINT NOT NULL
);
