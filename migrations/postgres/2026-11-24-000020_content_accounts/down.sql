DROP TRIGGER object_members_account ON object_members;
DROP FUNCTION object_members_account();
DROP TRIGGER file_versions_account ON file_versions;
DROP FUNCTION file_versions_account();
DROP TRIGGER objects_account ON objects;
DROP FUNCTION objects_account();
DROP FUNCTION content_account_add(TEXT, BIGINT);
DROP TABLE content_accounts;
