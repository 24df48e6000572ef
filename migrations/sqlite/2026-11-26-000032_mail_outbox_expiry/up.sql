-- The outbox keeps no live secret. `expires_at` (Unix seconds; NULL: never) is when the link or
-- code a message carries stops working: a message still queued then is marked `expired` and
-- never sent. The body of a message that will not be sent again (`sent`, `error`, `expired`) is
-- erased; recipient, subject, state, attempts and times stay for the operator. Bodies of
-- messages finished before this migration are erased here.
ALTER TABLE mail_outbox ADD COLUMN expires_at BIGINT;
UPDATE mail_outbox SET body = '' WHERE state <> 'queued';
-- The operator's listing (`cofferd mail outbox`) by state, newest first.
CREATE INDEX mail_outbox_state ON mail_outbox(state, created_at);
