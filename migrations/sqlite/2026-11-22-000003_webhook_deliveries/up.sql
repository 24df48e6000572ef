-- Webhook delivery. Fan-out marks each event dispatched (rather than advancing a cursor: on
-- PostgreSQL an event with a lower sequence number can commit after a higher one), creating one
-- delivery per matching webhook; workers claim due deliveries with a lease.
ALTER TABLE events ADD COLUMN dispatched BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX events_pending ON events(seq) WHERE dispatched = FALSE;

CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    event_id TEXT NOT NULL,
    subject TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    lease_until BIGINT,
    last_status INTEGER,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(state, next_attempt_at);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries(webhook_id, created_at);

-- The delivery log: one row per attempt.
CREATE TABLE webhook_attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
    attempt INTEGER NOT NULL,
    status_code INTEGER,
    duration_ms BIGINT NOT NULL,
    error TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts(delivery_id);
