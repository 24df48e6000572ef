DROP INDEX mail_outbox_state;
ALTER TABLE mail_outbox DROP COLUMN expires_at;
