//! Search: what a user may reach among folders and files (with the role that reaches it), the
//! full-text index of file text and mail (SQLite FTS5 or PostgreSQL `tsvector` with a GIN
//! index, behind the same functions), and the extraction state of each file's text.
//!
//! The index is fed by triggers (migration 000070): a new file version marks its file pending
//! and queues a `search-extract` job; mail is indexed as it is written. Queries take terms that
//! the service has already reduced to letters and digits, so no user text ever reaches the
//! full-text grammar of either backend.

use crate::{db_run, Backend, DbConn, StoreResult};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double, Nullable, Text};

/// A live folder or file a user reaches: their own, or one under a folder (or a file) shared
/// with them, with the role of the nearest membership on the way down (`None` for their own).
#[derive(Debug, Clone, QueryableByName)]
pub struct Reachable {
    #[diesel(sql_type = Text)]
    pub id: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub parent_id: Option<String>,
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = Text)]
    pub owner_id: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub system: Option<String>,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Text)]
    pub name_folded: String,
    #[diesel(sql_type = Text)]
    pub description: String,
    #[diesel(sql_type = BigInt)]
    pub created_at: i64,
    #[diesel(sql_type = BigInt)]
    pub modified_at: i64,
    #[diesel(sql_type = Text)]
    pub creator_id: String,
    #[diesel(sql_type = BigInt)]
    pub size: i64,
    #[diesel(sql_type = Nullable<Text>)]
    pub mime: Option<String>,
    /// The role of the nearest membership; `None` for the user's own objects.
    #[diesel(sql_type = Nullable<BigInt>)]
    pub role_id: Option<i64>,
    /// Whether the object is the root of the reach: the user's own root, or a folder or file
    /// shared with them directly (its parent is out of their reach).
    #[diesel(sql_type = BigInt)]
    pub top: i64,
}

/// Every live (not trashed, not purged) folder and file `user_id` reaches: the objects they
/// own, and everything at and under an object another user shared with them, down to the
/// next object shared with them again (whose own role then applies: the nearest membership
/// decides, as `content::nearest_membership` does for one object). System folders of other
/// users are never reached. The caller decides from the role what the user may do.
pub fn reachable(conn: &mut DbConn, user_id: &str) -> StoreResult<Vec<Reachable>> {
    let sql = "WITH RECURSIVE grants(id, role_id) AS ( \
                 SELECT m.object_id, m.role_id FROM object_members m \
                 JOIN objects o ON o.id = m.object_id \
                 WHERE m.user_id = $1 AND o.owner_id <> $1 AND o.system IS NULL \
                   AND o.perm_deleted = FALSE), \
               down(id, role_id, top, depth) AS ( \
                 SELECT id, role_id, CAST(1 AS BIGINT), CAST(0 AS BIGINT) FROM grants \
                 UNION ALL \
                 SELECT o.id, down.role_id, CAST(0 AS BIGINT), down.depth + 1 FROM objects o \
                 JOIN down ON o.parent_id = down.id \
                 WHERE down.depth < 4096 AND o.perm_deleted = FALSE AND o.system IS NULL \
                   AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = o.id)) \
               SELECT o.id, o.parent_id, o.kind, o.owner_id, o.system, o.name, o.name_folded, \
                      o.description, o.created_at, o.modified_at, o.creator_id, o.size, o.mime, \
                      CAST(NULL AS BIGINT) AS role_id, \
                      CAST(CASE WHEN o.system = 'base' THEN 1 ELSE 0 END AS BIGINT) AS top \
               FROM objects o \
               WHERE o.owner_id = $1 AND o.deleted_at IS NULL AND o.perm_deleted = FALSE \
               UNION ALL \
               SELECT o.id, o.parent_id, o.kind, o.owner_id, o.system, o.name, o.name_folded, \
                      o.description, o.created_at, o.modified_at, o.creator_id, o.size, o.mime, \
                      down.role_id, down.top \
               FROM down JOIN objects o ON o.id = down.id \
               WHERE o.owner_id <> $1 AND o.deleted_at IS NULL AND o.perm_deleted = FALSE";
    Ok(db_run!(conn => diesel::sql_query(sql)
        .bind::<Text, _>(user_id)
        .load::<Reachable>(conn))?)
}

/// The ids of the files uploaded with this tracking id.
pub fn tracked_files(conn: &mut DbConn, tracking_id: &str) -> StoreResult<Vec<String>> {
    use crate::schema::uploads;
    Ok(db_run!(conn => uploads::table
        .filter(uploads::tracking_id.eq(tracking_id))
        .filter(uploads::result_file_id.is_not_null())
        .select(uploads::result_file_id.assume_not_null())
        .load::<String>(conn))?)
}

/// A document kind of the index: a file's text or an email.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    File,
    Mail,
}

impl DocKind {
    fn as_str(self) -> &'static str {
        match self {
            DocKind::File => "f",
            DocKind::Mail => "m",
        }
    }
}

/// One hit of the full-text index: the file's or email's id and its relevance (larger is more
/// relevant; comparable within one query only).
#[derive(Debug, Clone, QueryableByName)]
pub struct Hit {
    #[diesel(sql_type = Text)]
    pub ref_id: String,
    #[diesel(sql_type = Double)]
    pub score: f64,
}

/// The full-text query of each backend for `terms` (letters and digits only, lower-cased,
/// never empty): every term must occur; the last one may be the start of a word.
fn fts_query(backend: Backend, terms: &[String]) -> String {
    let n = terms.len();
    match backend {
        Backend::Sqlite => terms
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if i + 1 == n {
                    format!("\"{t}\"*")
                } else {
                    format!("\"{t}\"")
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
        Backend::Postgres => terms
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if i + 1 == n {
                    format!("'{t}':*")
                } else {
                    format!("'{t}'")
                }
            })
            .collect::<Vec<_>>()
            .join(" & "),
    }
}

/// Keeps only what the full-text grammars cannot misread: letters and digits. The service
/// splits a query into such terms already; this guards the store's own contract.
fn clean_terms(terms: &[String]) -> Vec<String> {
    terms
        .iter()
        .map(|t| {
            t.chars()
                .filter(|c| c.is_alphanumeric())
                .flat_map(char::to_lowercase)
                .collect::<String>()
        })
        .filter(|t| !t.is_empty())
        .collect()
}

/// The documents of `kind` that hold every term, with their relevance. `among`, when given,
/// keeps only those ids (the objects or mail the caller reaches); the match is exact either
/// way, the filter only spares work.
pub fn matches(
    conn: &mut DbConn,
    kind: DocKind,
    terms: &[String],
    among: Option<&[String]>,
) -> StoreResult<Vec<Hit>> {
    let terms = clean_terms(terms);
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let q = fts_query(conn.backend(), &terms);
    let among_json = among.map(|ids| serde_json::to_string(ids).unwrap_or_else(|_| "[]".into()));
    match conn {
        DbConn::Sqlite(c) => {
            // bm25 is smaller for better matches; its negation is the score.
            let sql = match among_json {
                Some(_) => {
                    "SELECT d.ref_id AS ref_id, -bm25(search_fts, 4.0, 1.0) AS score \
                     FROM search_fts JOIN search_docs d ON d.id = search_fts.rowid \
                     WHERE search_fts MATCH $1 AND d.kind = $2 \
                       AND d.ref_id IN (SELECT value FROM json_each($3))"
                }
                None => {
                    "SELECT d.ref_id AS ref_id, -bm25(search_fts, 4.0, 1.0) AS score \
                     FROM search_fts JOIN search_docs d ON d.id = search_fts.rowid \
                     WHERE search_fts MATCH $1 AND d.kind = $2 AND $3 = ''"
                }
            };
            Ok(diesel::sql_query(sql)
                .bind::<Text, _>(&q)
                .bind::<Text, _>(kind.as_str())
                .bind::<Text, _>(among_json.unwrap_or_default())
                .load::<Hit>(c)?)
        }
        DbConn::Pg(c) => {
            let sql = match among_json {
                Some(_) => {
                    "SELECT ref_id, CAST(ts_rank(tsv, to_tsquery('simple', $1)) AS DOUBLE PRECISION) AS score \
                     FROM search_docs WHERE tsv @@ to_tsquery('simple', $1) AND kind = $2 \
                       AND ref_id IN (SELECT jsonb_array_elements_text(CAST($3 AS jsonb)))"
                }
                None => {
                    "SELECT ref_id, CAST(ts_rank(tsv, to_tsquery('simple', $1)) AS DOUBLE PRECISION) AS score \
                     FROM search_docs WHERE tsv @@ to_tsquery('simple', $1) AND kind = $2 AND $3 = ''"
                }
            };
            Ok(diesel::sql_query(sql)
                .bind::<Text, _>(&q)
                .bind::<Text, _>(kind.as_str())
                .bind::<Text, _>(among_json.unwrap_or_default())
                .load::<Hit>(c)?)
        }
    }
}

/// The start of a highlighted passage (never in stored text: extraction drops control
/// characters, and the service escapes the rest before marking).
pub const MARK_START: char = '\u{2}';
/// The end of a highlighted passage.
pub const MARK_END: char = '\u{3}';

/// A short passage of a document's text around the terms, the matched words between
/// [`MARK_START`] and [`MARK_END`].
pub fn snippet(
    conn: &mut DbConn,
    kind: DocKind,
    ref_id: &str,
    terms: &[String],
) -> StoreResult<Option<String>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        s: String,
    }
    let terms = clean_terms(terms);
    if terms.is_empty() {
        return Ok(None);
    }
    let q = fts_query(conn.backend(), &terms);
    let row: Option<Row> = match conn {
        DbConn::Sqlite(c) => diesel::sql_query(
            "SELECT snippet(search_fts, 1, char(2), char(3), '…', 16) AS s \
             FROM search_fts JOIN search_docs d ON d.id = search_fts.rowid \
             WHERE search_fts MATCH $1 AND d.kind = $2 AND d.ref_id = $3",
        )
        .bind::<Text, _>(&q)
        .bind::<Text, _>(kind.as_str())
        .bind::<Text, _>(ref_id)
        .get_result::<Row>(c)
        .optional()?,
        DbConn::Pg(c) => diesel::sql_query(
            "SELECT ts_headline('simple', body, to_tsquery('simple', $1), \
               'StartSel=' || chr(2) || ', StopSel=' || chr(3) || ', MaxWords=16, MinWords=6, MaxFragments=1, FragmentDelimiter=…') AS s \
             FROM search_docs WHERE kind = $2 AND ref_id = $3 AND tsv @@ to_tsquery('simple', $1)",
        )
        .bind::<Text, _>(&q)
        .bind::<Text, _>(kind.as_str())
        .bind::<Text, _>(ref_id)
        .get_result::<Row>(c)
        .optional()?,
    };
    Ok(row.map(|r| r.s))
}

/// Puts a file's text into the index in place of any earlier text, and records the version
/// indexed. Returns false (and indexes nothing) when the file has moved on to another version
/// meanwhile: that version's own job indexes it.
pub fn put_file_text(
    conn: &mut DbConn,
    file_id: &str,
    version_id: &str,
    text: &str,
    t: i64,
) -> StoreResult<bool> {
    if !version_is_pending(conn, file_id, version_id)? {
        return Ok(false);
    }
    match conn {
        DbConn::Sqlite(c) => {
            diesel::sql_query(
                "DELETE FROM search_fts WHERE rowid = \
                 (SELECT id FROM search_docs WHERE kind = 'f' AND ref_id = $1)",
            )
            .bind::<Text, _>(file_id)
            .execute(c)?;
            diesel::sql_query(
                "INSERT INTO search_docs (kind, ref_id) VALUES ('f', $1) \
                 ON CONFLICT (kind, ref_id) DO NOTHING",
            )
            .bind::<Text, _>(file_id)
            .execute(c)?;
            // SQLite numbers `$N` parameters by their first appearance: they come in order.
            diesel::sql_query(
                "INSERT INTO search_fts (rowid, title, body) \
                 SELECT id, '', $1 FROM search_docs WHERE kind = 'f' AND ref_id = $2",
            )
            .bind::<Text, _>(text)
            .bind::<Text, _>(file_id)
            .execute(c)?;
        }
        DbConn::Pg(c) => {
            diesel::sql_query(
                "INSERT INTO search_docs (kind, ref_id, title, body, tsv) \
                 VALUES ('f', $1, '', $2, search_tsv('', $2)) \
                 ON CONFLICT (kind, ref_id) DO UPDATE SET body = excluded.body, tsv = excluded.tsv",
            )
            .bind::<Text, _>(file_id)
            .bind::<Text, _>(text)
            .execute(c)?;
        }
    }
    set_state(conn, file_id, "indexed", None, text.len() as i64, t)?;
    Ok(true)
}

fn version_is_pending(conn: &mut DbConn, file_id: &str, version_id: &str) -> StoreResult<bool> {
    Ok(matches!(state(conn, file_id)?, Some(s) if s.version_id == version_id))
}

fn set_state(
    conn: &mut DbConn,
    file_id: &str,
    state: &str,
    error: Option<&str>,
    bytes: i64,
    t: i64,
) -> StoreResult<()> {
    // SQLite numbers `$N` parameters by their first appearance: they come in order.
    db_run!(conn => diesel::sql_query(
        "UPDATE search_texts SET state = $1, error = $2, text_bytes = $3, updated_at = $4, \
         attempts = attempts + 1 WHERE file_id = $5",
    )
    .bind::<Text, _>(state)
    .bind::<Nullable<Text>, _>(error)
    .bind::<BigInt, _>(bytes)
    .bind::<BigInt, _>(t)
    .bind::<Text, _>(file_id)
    .execute(conn))?;
    Ok(())
}

/// Records that a version's text could not be had (`failed`, with the reason) or that its type
/// holds none (`skipped`); the earlier text of the file leaves the index. Returns false when
/// the file has moved on to another version meanwhile.
pub fn record_without_text(
    conn: &mut DbConn,
    file_id: &str,
    version_id: &str,
    state: &str,
    error: Option<&str>,
    t: i64,
) -> StoreResult<bool> {
    if !version_is_pending(conn, file_id, version_id)? {
        return Ok(false);
    }
    remove_file_text(conn, file_id)?;
    set_state(conn, file_id, state, error, 0, t)?;
    Ok(true)
}

fn remove_file_text(conn: &mut DbConn, file_id: &str) -> StoreResult<()> {
    if let DbConn::Sqlite(c) = conn {
        diesel::sql_query(
            "DELETE FROM search_fts WHERE rowid = \
             (SELECT id FROM search_docs WHERE kind = 'f' AND ref_id = $1)",
        )
        .bind::<Text, _>(file_id)
        .execute(c)?;
    }
    db_run!(conn => diesel::sql_query("DELETE FROM search_docs WHERE kind = 'f' AND ref_id = $1")
        .bind::<Text, _>(file_id)
        .execute(conn))?;
    Ok(())
}

/// A file's extraction state.
#[derive(Debug, Clone, QueryableByName)]
pub struct TextState {
    #[diesel(sql_type = Text)]
    pub file_id: String,
    #[diesel(sql_type = Text)]
    pub version_id: String,
    #[diesel(sql_type = Text)]
    pub state: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub error: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub attempts: i64,
    #[diesel(sql_type = BigInt)]
    pub text_bytes: i64,
}

pub fn state(conn: &mut DbConn, file_id: &str) -> StoreResult<Option<TextState>> {
    Ok(db_run!(conn => diesel::sql_query(
        "SELECT file_id, version_id, state, error, attempts, text_bytes FROM search_texts \
         WHERE file_id = $1",
    )
    .bind::<Text, _>(file_id)
    .get_result::<TextState>(conn)
    .optional())?)
}

/// The files in a state, oldest change first, at most `limit`.
pub fn in_state(conn: &mut DbConn, state: &str, limit: i64) -> StoreResult<Vec<TextState>> {
    Ok(db_run!(conn => diesel::sql_query(
        "SELECT file_id, version_id, state, error, attempts, text_bytes FROM search_texts \
         WHERE state = $1 ORDER BY updated_at, file_id LIMIT $2",
    )
    .bind::<Text, _>(state)
    .bind::<BigInt, _>(limit)
    .load::<TextState>(conn))?)
}

/// How many files are in each extraction state, and the bytes of text indexed.
#[derive(Debug, Clone, QueryableByName)]
pub struct StateCount {
    #[diesel(sql_type = Text)]
    pub state: String,
    #[diesel(sql_type = BigInt)]
    pub files: i64,
    #[diesel(sql_type = BigInt)]
    pub text_bytes: i64,
}

pub fn counts(conn: &mut DbConn) -> StoreResult<Vec<StateCount>> {
    Ok(db_run!(conn => diesel::sql_query(
        "SELECT state, COUNT(*) AS files, CAST(COALESCE(SUM(text_bytes), 0) AS BIGINT) AS text_bytes \
         FROM search_texts GROUP BY state ORDER BY state",
    )
    .load::<StateCount>(conn))?)
}

/// Marks every live file's current version pending again and queues its extraction, and
/// indexes every email anew: the whole index rebuilt from what is stored. Returns the files
/// queued.
pub fn reindex_all(conn: &mut DbConn, t: i64) -> StoreResult<usize> {
    let mail = match conn.backend() {
        Backend::Sqlite => {
            "DELETE FROM search_fts; DELETE FROM search_docs; \
             INSERT INTO search_docs (kind, ref_id) SELECT 'm', id FROM emails; \
             INSERT INTO search_fts (rowid, title, body) SELECT d.id, e.subject, e.body \
             FROM search_docs d JOIN emails e ON e.id = d.ref_id WHERE d.kind = 'm';"
        }
        Backend::Postgres => {
            "DELETE FROM search_docs; \
             INSERT INTO search_docs (kind, ref_id, title, body, tsv) \
             SELECT 'm', id, subject, body, search_tsv(subject, body) FROM emails;"
        }
    };
    crate::batch_execute(conn, mail)?;
    db_run!(conn => diesel::sql_query(
        "DELETE FROM jobs WHERE kind = 'search-extract' AND state IN ('queued', 'failed', 'done')",
    )
    .execute(conn))?;
    db_run!(conn => diesel::sql_query("DELETE FROM search_texts").execute(conn))?;
    let n = db_run!(conn => diesel::sql_query(
        "INSERT INTO search_texts (file_id, version_id, state, error, attempts, text_bytes, updated_at) \
         SELECT o.id, o.current_version_id, 'pending', NULL, 0, 0, $1 FROM objects o \
         WHERE o.kind = 'f' AND o.current_version_id IS NOT NULL AND o.perm_deleted = FALSE",
    )
    .bind::<BigInt, _>(t)
    .execute(conn))?;
    db_run!(conn => diesel::sql_query(
        "INSERT INTO jobs (kind, payload, state, attempts, max_attempts, run_at, created_at, updated_at) \
         SELECT 'search-extract', file_id, 'queued', 0, 5, $1, $1, $1 FROM search_texts",
    )
    .bind::<BigInt, _>(t)
    .execute(conn))?;
    crate::wake::announce(conn, crate::wake::Work::Jobs)?;
    Ok(n)
}

/// The bytes the full-text index takes (SQLite: the FTS5 index's blocks; PostgreSQL: the
/// documents' table with its GIN index and TOAST), for `cofferd search status`.
pub fn index_bytes(conn: &mut DbConn) -> StoreResult<i64> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let row: Option<Row> = match conn {
        // The FTS5 index proper: its b-tree blocks (the text itself is in `search_fts_content`).
        DbConn::Sqlite(c) => diesel::sql_query(
            "SELECT CAST(COALESCE(SUM(length(block)), 0) AS BIGINT) AS n FROM search_fts_data",
        )
        .get_result::<Row>(c)
        .optional()?,
        DbConn::Pg(c) => {
            diesel::sql_query("SELECT CAST(pg_total_relation_size('search_docs') AS BIGINT) AS n")
                .get_result::<Row>(c)
                .optional()?
        }
    };
    Ok(row.map_or(0, |r| r.n))
}

/// The caller's mail that matches: the ids of emails with an entry (not in the trash) in one
/// of `boxes`, with the entry's bucket, for the service to filter further.
#[derive(Debug, Clone, QueryableByName)]
pub struct MailRow {
    #[diesel(sql_type = Text)]
    pub email_id: String,
    #[diesel(sql_type = Text)]
    pub user_id: String,
    #[diesel(sql_type = Text)]
    pub bucket: String,
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = Text)]
    pub sender_id: String,
    #[diesel(sql_type = Text)]
    pub subject: String,
    #[diesel(sql_type = BigInt)]
    pub created_at: i64,
    #[diesel(sql_type = BigInt)]
    pub modified_at: i64,
}

/// Every live mailbox entry of `boxes` with its email.
pub fn mail_of(conn: &mut DbConn, boxes: &[String]) -> StoreResult<Vec<MailRow>> {
    let json = serde_json::to_string(boxes).unwrap_or_else(|_| "[]".into());
    let sql = match conn.backend() {
        Backend::Sqlite => {
            "SELECT e.email_id, e.user_id, e.bucket, m.status, m.sender_id, m.subject, \
                    e.created_at, m.modified_at \
             FROM mailbox_entries e JOIN emails m ON m.id = e.email_id \
             WHERE e.trashed_at IS NULL AND e.user_id IN (SELECT value FROM json_each($1))"
        }
        Backend::Postgres => {
            "SELECT e.email_id, e.user_id, e.bucket, m.status, m.sender_id, m.subject, \
                    e.created_at, m.modified_at \
             FROM mailbox_entries e JOIN emails m ON m.id = e.email_id \
             WHERE e.trashed_at IS NULL \
               AND e.user_id IN (SELECT jsonb_array_elements_text(CAST($1 AS jsonb)))"
        }
    };
    Ok(db_run!(conn => diesel::sql_query(sql)
        .bind::<Text, _>(&json)
        .load::<MailRow>(conn))?)
}

/// The user ids among an email's recipients, per email.
pub fn recipient_users(
    conn: &mut DbConn,
    email_ids: &[String],
) -> StoreResult<Vec<(String, String)>> {
    use crate::schema::email_recipients;
    Ok(db_run!(conn => email_recipients::table
        .filter(email_recipients::email_id.eq_any(email_ids))
        .filter(email_recipients::user_id.is_not_null())
        .select((email_recipients::email_id, email_recipients::user_id.assume_not_null()))
        .load::<(String, String)>(conn))?)
}
