DROP TABLE shared_mailbox_members;
DROP TABLE shared_mailboxes;
