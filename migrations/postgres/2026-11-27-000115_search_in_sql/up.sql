-- Search decides in one statement what each caller may find. The `tracking_id` criterion looks
-- uploads up by their tracking id.
CREATE INDEX uploads_tracking ON uploads(tracking_id) WHERE tracking_id IS NOT NULL;

-- A name's fold as Coffer compares names (NFC, lower case, NFC), for descriptions, which are
-- stored only as written. Unicode's case mapping comes from ICU where the server has it: the
-- database's own collation may be "C", whose lower() changes ASCII letters only.
DO $$
BEGIN
    EXECUTE 'CREATE FUNCTION coffer_fold(t TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE STRICT '
         || 'PARALLEL SAFE AS $f$ SELECT normalize(lower(normalize(t, NFC) COLLATE "und-x-icu"), NFC) $f$';
EXCEPTION WHEN OTHERS THEN
    EXECUTE 'CREATE FUNCTION coffer_fold(t TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE STRICT '
         || 'PARALLEL SAFE AS $f$ SELECT normalize(lower(normalize(t, NFC)), NFC) $f$';
END
$$;
