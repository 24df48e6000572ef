ALTER TABLE uploads DROP COLUMN email_id;
DROP INDEX mail_outbox_email;
ALTER TABLE mail_outbox DROP COLUMN email_id;
DROP TABLE mailbox_entries;
DROP TABLE email_attachments;
DROP TABLE email_recipients;
DROP TABLE emails;
