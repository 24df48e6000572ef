DROP INDEX activities_object;
CREATE INDEX activities_object ON activities(object_id, seq);
