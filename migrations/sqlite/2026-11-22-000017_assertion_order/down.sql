CREATE TABLE used_assertions_by_jti (
    client_id TEXT NOT NULL,
    jti TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (client_id, jti)
) WITHOUT ROWID;
INSERT OR IGNORE INTO used_assertions_by_jti (client_id, jti, expires_at)
    SELECT client_id, jti, MAX(expires_at) FROM used_assertions GROUP BY client_id, jti;
DROP TABLE used_assertions;
ALTER TABLE used_assertions_by_jti RENAME TO used_assertions;
