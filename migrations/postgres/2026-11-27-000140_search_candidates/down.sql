DROP INDEX objects_described;
DROP INDEX objects_name;
