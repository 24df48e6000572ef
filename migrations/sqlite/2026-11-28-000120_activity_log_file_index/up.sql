-- The activity log's index by object keeps only records about files. The one read that starts
-- from it is a file's activities (a folder's are read through the user's key, the object or
-- parent filtered on those rows), and only records about files carry a file's id as their
-- object. Every other append (a folder create, a sign-in, a setting) no longer writes a page of
-- the index. The records themselves do not change.
DROP INDEX activities_object;
CREATE INDEX activities_object ON activities(object_id, seq) WHERE object_kind = 'file';
