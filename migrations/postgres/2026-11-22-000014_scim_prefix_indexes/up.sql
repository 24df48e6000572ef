-- SCIM `sw` filters are ranges compared under COLLATE "C" (the order SQLite and Rust use); an
-- index serves such a range only when it is built with the same collation.
CREATE INDEX users_user_name_lower_c ON users ((lower(user_name) COLLATE "C"));
CREATE INDEX users_email_c ON users ((email COLLATE "C"));
CREATE INDEX users_external_id_c ON users ((external_id COLLATE "C"));
