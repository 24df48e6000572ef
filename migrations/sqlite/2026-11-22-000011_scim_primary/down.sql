ALTER TABLE users DROP COLUMN mobile_primary;
ALTER TABLE users DROP COLUMN email_primary;
