DROP INDEX objects_children_reach;
DROP INDEX objects_owned_reach;
