DROP INDEX users_created;
DROP INDEX users_external_id;
DROP INDEX users_user_name_lower;
ALTER TABLE users DROP COLUMN preferred_language;
ALTER TABLE users DROP COLUMN external_id;
ALTER TABLE users DROP COLUMN user_name;
