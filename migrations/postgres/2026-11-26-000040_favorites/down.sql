DROP TRIGGER favorites_generation ON favorites;
DROP FUNCTION favorites_generation();
DROP TRIGGER objects_purge_favorites ON objects;
DROP FUNCTION objects_purge_favorites();
DROP TABLE favorites;
