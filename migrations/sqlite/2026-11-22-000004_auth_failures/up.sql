-- Failed sign-ins per account and per client address, shared by every node, for throttling.
CREATE TABLE auth_failures (
    key TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    window_start BIGINT NOT NULL,
    locked_until BIGINT
);
