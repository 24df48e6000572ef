-- Nothing changes on PostgreSQL: its index by object stays whole, because a folder's
-- activities combine it with the index by parent (on SQLite, migration 000120 keeps only
-- records about files in it). The migration exists on both back ends so that they count the
-- same migrations.
SELECT 1;
