-- Search decides in one statement what each caller may find. The `tracking_id` criterion looks
-- uploads up by their tracking id. (The fold of descriptions, `coffer_fold`, is a function of
-- each SQLite connection, added when it opens.)
CREATE INDEX uploads_tracking ON uploads(tracking_id) WHERE tracking_id IS NOT NULL;
