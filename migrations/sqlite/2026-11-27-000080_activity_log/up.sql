-- The activity log: one record per event of interest (and per refused action of interest), with
-- the fields the DLI activity reads answer. `seq` is gapless and assigned from the chain head in
-- the transaction that appends, so removing or inserting a record shows as a gap or a broken
-- link. `hash` is the hex SHA-256 over the record's content and `prev_hash`, the previous
-- record's hash (kept, so a rewritten hash shows at the record rewritten).
-- Times are Unix seconds.
CREATE TABLE activities (
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
-- Retention deletes by time from the oldest end; the object reads go by object or parent.
CREATE INDEX activities_created ON activities(created_at);
CREATE INDEX activities_object ON activities(object_id, seq);
CREATE INDEX activities_parent ON activities(parent_id, seq);

-- Who a record concerns: the actor (`direct`) and the users the event names. A user's
-- activities are read through this index, newest first.
CREATE TABLE activity_users (
    user_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    direct BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, seq)
);
CREATE INDEX activity_users_seq ON activity_users(seq);

-- The chain head: one row, the last sequence number and its hash. Appending reads and advances
-- it in the appending transaction (locked FOR UPDATE on PostgreSQL), so no two records share a
-- predecessor. `first_seq`/`first_prev` say where the kept chain starts after retention removed
-- older records (the hash before `first_seq`, taken from a signed checkpoint).
CREATE TABLE audit_chain (
    id INTEGER PRIMARY KEY NOT NULL,
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL,
    first_seq BIGINT NOT NULL,
    first_prev TEXT NOT NULL
);
INSERT INTO audit_chain (id, seq, hash, first_seq, first_prev)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000', 1,
        '0000000000000000000000000000000000000000000000000000000000000000');

-- Signed checkpoints: the hash at a sequence number, signed with the Ed25519 key held outside
-- the database. `public_key` is the hex key the signature verifies with.
CREATE TABLE audit_checkpoints (
    seq BIGINT PRIMARY KEY NOT NULL,
    hash TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    public_key TEXT NOT NULL,
    signature TEXT NOT NULL
);
