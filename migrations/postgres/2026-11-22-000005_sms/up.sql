-- Text messages sent by the recording SMS sender (the default): what a gateway would have sent.
CREATE TABLE sms_messages (
    id TEXT PRIMARY KEY,
    user_id TEXT REFERENCES users(id) ON DELETE CASCADE,
    to_number TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX sms_messages_to ON sms_messages(to_number, created_at);
