-- Coffer sends the outbox over SMTP when a relay is configured (coffer-delivery's `mail`).
-- `state`: `queued` (to be sent; the state of every message written before), `sent` or `error`
-- (attempts spent, or the relay refused the message for good). `next_attempt_at` and
-- `lease_until` are Unix milliseconds; a sender holds a message it claimed until `lease_until`
-- (`lease_node` names it). `last_error` keeps the last failure's reason, never credentials.
-- `message_id` is the Message-ID header, fixed when the message is written, so that every attempt
-- sends the same one (NULL for a message written before: the sender derives it from `id`).
ALTER TABLE mail_outbox ADD COLUMN state TEXT NOT NULL DEFAULT 'queued';
ALTER TABLE mail_outbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mail_outbox ADD COLUMN next_attempt_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE mail_outbox ADD COLUMN lease_node TEXT;
ALTER TABLE mail_outbox ADD COLUMN lease_until BIGINT;
ALTER TABLE mail_outbox ADD COLUMN last_error TEXT;
ALTER TABLE mail_outbox ADD COLUMN sent_at BIGINT;
ALTER TABLE mail_outbox ADD COLUMN message_id TEXT;
-- The messages a sender looks at: only those still queued.
CREATE INDEX mail_outbox_due ON mail_outbox(next_attempt_at) WHERE state = 'queued';
