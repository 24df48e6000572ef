CREATE INDEX activities_created ON activities(created_at);
