DROP INDEX users_user_name_folded_c;
DROP INDEX users_user_name_folded;
ALTER TABLE users DROP COLUMN user_name_folded;
CREATE UNIQUE INDEX users_user_name_lower ON users (lower(user_name));
CREATE INDEX users_user_name_lower_c ON users ((lower(user_name) COLLATE "C"));
