-- A family may end at a fixed time whatever its client's lifetimes say: no token issued into
-- it, a rotation's included, outlives `ends_at` (the short-lived tokens confined to one file).
-- NULL: the client's lifetimes alone decide.
ALTER TABLE token_families ADD COLUMN ends_at BIGINT;
