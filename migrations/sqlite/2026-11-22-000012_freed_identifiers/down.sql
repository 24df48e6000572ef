ALTER TABLE users DROP COLUMN former_email;
