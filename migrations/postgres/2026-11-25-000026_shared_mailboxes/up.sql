-- Shared mailboxes. Times are Unix seconds.

-- A shared mailbox is a user account converted by an administrator: the row marks the account
-- (it can no longer sign in; its data stays and becomes the mailbox's). Its id is the user's.
CREATE TABLE shared_mailboxes (
    user_id TEXT PRIMARY KEY NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    modified_at BIGINT NOT NULL
);

-- The members of a mailbox. A member works with the mailbox only while `active` (each member
-- turns it on or off for themselves, within the setting `sharedMailboxMaxActive`); new members
-- start inactive. `modified_at` is when the membership or its flag last changed.
CREATE TABLE shared_mailbox_members (
    mailbox_id TEXT NOT NULL REFERENCES shared_mailboxes(user_id) ON DELETE CASCADE,
    member_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    active BOOLEAN NOT NULL DEFAULT FALSE,
    modified_at BIGINT NOT NULL,
    PRIMARY KEY (mailbox_id, member_id)
);
CREATE INDEX shared_mailbox_members_member ON shared_mailbox_members(member_id, active);
