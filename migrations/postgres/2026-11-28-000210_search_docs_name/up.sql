-- Nothing changes on PostgreSQL: migration 000210 gives SQLite's documents of file text the
-- file's folded name and creator, measured there (the benchmark's back end). The migration
-- exists on both back ends so that they count the same migrations.
SELECT 1;
