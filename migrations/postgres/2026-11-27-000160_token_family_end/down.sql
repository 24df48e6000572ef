ALTER TABLE token_families DROP COLUMN ends_at;
