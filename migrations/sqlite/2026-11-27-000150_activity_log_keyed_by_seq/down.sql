CREATE TABLE audit_chain_head (
    id INTEGER PRIMARY KEY NOT NULL,
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL,
    first_seq BIGINT NOT NULL,
    first_prev TEXT NOT NULL
);
INSERT INTO audit_chain_head (id, seq, hash, first_seq, first_prev)
SELECT id,
    COALESCE((SELECT MAX(seq) FROM activities), first_seq - 1),
    COALESCE((SELECT hash FROM activities ORDER BY seq DESC LIMIT 1), first_prev),
    first_seq, first_prev
FROM audit_chain;
DROP TABLE audit_chain;
ALTER TABLE audit_chain_head RENAME TO audit_chain;

CREATE TABLE activity_users_rowid (
    user_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    direct BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, seq)
);
INSERT INTO activity_users_rowid (user_id, seq, direct, created_at)
SELECT user_id, seq, direct, created_at FROM activity_users;
DROP TABLE activity_users;
ALTER TABLE activity_users_rowid RENAME TO activity_users;
CREATE INDEX activity_users_seq ON activity_users(seq);

CREATE TABLE activities_bigint (
    seq BIGINT PRIMARY KEY NOT NULL,
    created_at BIGINT NOT NULL,
    event TEXT NOT NULL,
    kind TEXT NOT NULL,
    actor_id TEXT,
    object_id TEXT,
    object_kind TEXT,
    object_name TEXT,
    parent_id TEXT,
    message TEXT NOT NULL,
    successful BOOLEAN NOT NULL,
    transaction_id TEXT,
    users TEXT NOT NULL,
    data TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO activities_bigint (seq, created_at, event, kind, actor_id, object_id, object_kind,
    object_name, parent_id, message, successful, transaction_id, users, data, prev_hash, hash)
SELECT seq, created_at, event, kind, actor_id, object_id, object_kind, object_name, parent_id,
    message, successful, transaction_id, users, data, prev_hash, hash
FROM activities;
DROP TABLE activities;
ALTER TABLE activities_bigint RENAME TO activities;
CREATE INDEX activities_object ON activities(object_id, seq);
CREATE INDEX activities_parent ON activities(parent_id, seq);
