-- A ticket of the authorization page now says which step it opens: the consent page, or the
-- two-factor step before it.
ALTER TABLE authorize_requests ADD COLUMN kind TEXT NOT NULL DEFAULT 'consent';
