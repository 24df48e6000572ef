DROP TRIGGER favorites_generation_delete;
DROP TRIGGER favorites_generation_insert;
DROP TRIGGER objects_purge_favorites;
DROP TABLE favorites;
