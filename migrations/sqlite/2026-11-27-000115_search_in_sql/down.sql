DROP INDEX uploads_tracking;
