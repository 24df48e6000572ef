DROP FUNCTION coffer_fold(TEXT);
DROP INDEX uploads_tracking;
