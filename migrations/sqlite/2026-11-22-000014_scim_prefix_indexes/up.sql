-- Nothing on SQLite: it compares text with the binary collation already, so the indexes of
-- 000009 serve SCIM `sw` ranges. (PostgreSQL needs COLLATE "C" indexes; same migration name.)
SELECT 1;
