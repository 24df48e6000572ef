-- Nothing changes on PostgreSQL: migration 000190 lets SQLite decide which full-text hits a
-- caller reaches from the documents' own rows, measured there (the benchmark's back end).
-- PostgreSQL's search reads its hits through the GIN index and joins the reach as before. The
-- migration exists on both back ends so that they count the same migrations.
SELECT 1;
