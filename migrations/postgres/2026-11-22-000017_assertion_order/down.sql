DELETE FROM used_assertions a USING used_assertions b
    WHERE a.client_id = b.client_id AND a.jti = b.jti AND a.expires_at < b.expires_at;
ALTER TABLE used_assertions DROP CONSTRAINT used_assertions_pkey;
ALTER TABLE used_assertions ADD PRIMARY KEY (client_id, jti);
