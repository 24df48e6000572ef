-- Replay records of JWT assertions keyed by expiry first: a record is made for every JWT grant,
-- and a key that starts with a random jti scattered those inserts over the whole b-tree (a page
-- of WAL each). Expiry first appends them, and housekeeping deletes from the other end. The
-- same assertion always has the same expiry, so a replay still finds its record.
CREATE TABLE used_assertions_by_expiry (
    client_id TEXT NOT NULL,
    jti TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (expires_at, client_id, jti)
) WITHOUT ROWID;
INSERT INTO used_assertions_by_expiry (client_id, jti, expires_at)
    SELECT client_id, jti, expires_at FROM used_assertions;
DROP TABLE used_assertions;
ALTER TABLE used_assertions_by_expiry RENAME TO used_assertions;
