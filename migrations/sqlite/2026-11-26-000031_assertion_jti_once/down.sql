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
