-- Webhooks (interface §4.17). The secret and the token are kept as given: the secret signs each
-- delivery and the token is sent to the receiver, so both must be readable by the server.
CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    owner_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    token TEXT,
    secret TEXT NOT NULL,
    enabled BOOLEAN NOT NULL,
    subscriptions TEXT NOT NULL,
    status TEXT NOT NULL,
    description TEXT NOT NULL,
    version BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX webhooks_owner ON webhooks(owner_id, created_at);
