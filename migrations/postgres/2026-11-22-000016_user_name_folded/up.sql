-- userName without regard to case, folded by Coffer (Unicode lowercase) rather than by the
-- database, whose lower() depends on its locale. Filled here with lower(); Coffer refolds the
-- names that fold otherwise right after this migration (store::users::refold_user_names).
ALTER TABLE users ADD COLUMN user_name_folded TEXT;
UPDATE users SET user_name_folded = lower(user_name);
DROP INDEX users_user_name_lower;
DROP INDEX users_user_name_lower_c;
CREATE UNIQUE INDEX users_user_name_folded ON users (user_name_folded);
CREATE INDEX users_user_name_folded_c ON users ((user_name_folded COLLATE "C"));
