DROP INDEX mail_outbox_due;
ALTER TABLE mail_outbox DROP COLUMN message_id;
ALTER TABLE mail_outbox DROP COLUMN sent_at;
ALTER TABLE mail_outbox DROP COLUMN last_error;
ALTER TABLE mail_outbox DROP COLUMN lease_until;
ALTER TABLE mail_outbox DROP COLUMN lease_node;
ALTER TABLE mail_outbox DROP COLUMN next_attempt_at;
ALTER TABLE mail_outbox DROP COLUMN attempts;
ALTER TABLE mail_outbox DROP COLUMN state;
