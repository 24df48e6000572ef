-- Replay records of JWT assertions keyed by expiry first, so that the record every JWT grant
-- makes is appended instead of scattered by a random jti. The same assertion always has the
-- same expiry, so a replay still finds its record.
ALTER TABLE used_assertions DROP CONSTRAINT used_assertions_pkey;
ALTER TABLE used_assertions ADD PRIMARY KEY (expires_at, client_id, jti);
