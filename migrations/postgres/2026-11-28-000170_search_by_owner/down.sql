-- Nothing changes on PostgreSQL: its GIN index answers a query with the documents that hold the
-- words and the search joins them to the caller's reach (on SQLite, migration 000170 numbers
-- each file's document within its owner's range, so that FTS5 reads only the caller's ranges).
-- The migration exists on both back ends so that they count the same migrations.
SELECT 1;
