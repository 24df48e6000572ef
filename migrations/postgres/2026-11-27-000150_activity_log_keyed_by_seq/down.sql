ALTER TABLE audit_chain ADD COLUMN seq BIGINT, ADD COLUMN hash TEXT;
UPDATE audit_chain SET
    seq = COALESCE((SELECT MAX(seq) FROM activities), first_seq - 1),
    hash = COALESCE((SELECT hash FROM activities ORDER BY seq DESC LIMIT 1), first_prev);
ALTER TABLE audit_chain ALTER COLUMN seq SET NOT NULL, ALTER COLUMN hash SET NOT NULL;
CREATE INDEX activity_users_seq ON activity_users(seq);
