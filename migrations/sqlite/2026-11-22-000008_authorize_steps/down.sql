ALTER TABLE authorize_requests DROP COLUMN kind;
