-- DLI exports: an administrator's request for one user's activities, files or emails over a
-- range of days, made by a job on the shared queue. `status` moves `inprocess` -> `completed`
-- (the file is written: `blob_id`, `file_name`, `size`), `nodata` (nothing in the range) or
-- `error` (the job failed twice; `attempts` counts the failures). `blob_id` counts one reference
-- to its blob (`blobs.refs`), released when the export is deleted. The user may be deleted
-- later: no foreign key, the record stays until an administrator deletes it.
-- Days are `YYYY-MM-DD` (UTC); times are Unix seconds.
CREATE TABLE dli_exports (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    kind TEXT NOT NULL,
    start_day TEXT NOT NULL,
    end_day TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    file_name TEXT,
    blob_id TEXT,
    size BIGINT,
    generated_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX dli_exports_user ON dli_exports(user_id, id);

-- A `files` export reads the versions one user made in a range of days, in creation order.
CREATE INDEX file_versions_creator ON file_versions(creator_id, created_at, id);
