-- The activity log with fewer writes per append, its records unchanged (so every record written
-- before still hashes to its hash and links to its predecessor):
-- - `audit_chain` keeps only where the kept chain starts: an append reads the head as the last
--   record by key (under a transaction-scoped advisory lock, so two appends never read the same
--   predecessor), so the row is no longer written by every append.
-- - `activity_users` loses its index by `seq`: retention deletes each user's expired rows by the
--   key `(user_id, seq)` instead.
-- (On SQLite the tables are also rebuilt keyed by their keys; a PostgreSQL table is a heap
-- with its key as an index either way.)
DROP INDEX activity_users_seq;
ALTER TABLE audit_chain DROP COLUMN seq, DROP COLUMN hash;
