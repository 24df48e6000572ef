DROP INDEX users_external_id_c;
DROP INDEX users_email_c;
DROP INDEX users_user_name_lower_c;
