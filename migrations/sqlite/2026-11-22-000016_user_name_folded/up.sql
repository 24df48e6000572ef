-- userName without regard to case, folded by Coffer (Unicode lowercase) rather than by the
-- database: SQLite's lower() folds ASCII letters only. Unique, and the index SCIM `eq` and `sw`
-- filters and sorting by userName use. Filled here with lower(); Coffer refolds the names with
-- other letters right after this migration (store::users::refold_user_names).
ALTER TABLE users ADD COLUMN user_name_folded TEXT;
UPDATE users SET user_name_folded = lower(user_name);
DROP INDEX users_user_name_lower;
CREATE UNIQUE INDEX users_user_name_folded ON users (user_name_folded);
