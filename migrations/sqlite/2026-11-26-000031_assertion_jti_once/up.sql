-- A jti is usable once per client, whatever the exp of the assertion that carries it (RFC 7523
-- §3 item 7). Keyed by expiry first (000017), a new assertion that reused a seen jti with a
-- later exp had a key of its own and was accepted; the key is (client_id, jti) again, so the
-- one insert of the grant is the whole check. Of records the old key let in twice, the one that
-- lasts longest is kept.
CREATE TABLE used_assertions_once (
    client_id TEXT NOT NULL,
    jti TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (client_id, jti)
) WITHOUT ROWID;
INSERT INTO used_assertions_once (client_id, jti, expires_at)
    SELECT client_id, jti, MAX(expires_at) FROM used_assertions GROUP BY client_id, jti;
DROP TABLE used_assertions;
ALTER TABLE used_assertions_once RENAME TO used_assertions;
