-- The SCIM `primary` flag of a user's email and of the mobile number, as the identity provider
-- set it; NULL (never set) answers true.
ALTER TABLE users ADD COLUMN email_primary BOOLEAN;
ALTER TABLE users ADD COLUMN mobile_primary BOOLEAN;
