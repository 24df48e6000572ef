-- A deleted account gives up its email and userName, so that the address can be given to a new
-- account (an identity provider that deletes a user and later adds one with the same email);
-- the address it had is kept here for the record.
ALTER TABLE users ADD COLUMN former_email TEXT;
