DROP TABLE audit_checkpoints;
DROP TABLE audit_chain;
DROP TABLE activity_users;
DROP TABLE activities;
