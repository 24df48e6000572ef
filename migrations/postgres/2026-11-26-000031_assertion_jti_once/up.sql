-- A jti is usable once per client, whatever the exp of the assertion that carries it (RFC 7523
-- §3 item 7). Keyed by expiry first (000017), a new assertion that reused a seen jti with a
-- later exp had a key of its own and was accepted; the key is (client_id, jti) again, so the
-- one insert of the grant is the whole check. Of records the old key let in twice, the one that
-- lasts longest is kept.
DELETE FROM used_assertions a USING used_assertions b
    WHERE a.client_id = b.client_id AND a.jti = b.jti AND a.expires_at < b.expires_at;
ALTER TABLE used_assertions DROP CONSTRAINT used_assertions_pkey;
ALTER TABLE used_assertions ADD PRIMARY KEY (client_id, jti);
