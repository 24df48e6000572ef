DROP TABLE mail_access_sessions;
DROP TABLE mail_access_codes;
