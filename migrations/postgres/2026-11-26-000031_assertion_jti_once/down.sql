ALTER TABLE used_assertions DROP CONSTRAINT used_assertions_pkey;
ALTER TABLE used_assertions ADD PRIMARY KEY (expires_at, client_id, jti);
