-- The activity log without its index by time: no read goes by `activities.created_at` alone
-- (retention finds its checkpoint through the primary key, the DLI reads filter by time on
-- `activity_users`), and every append paid for it with one more index page written per commit.
DROP INDEX activities_created;
