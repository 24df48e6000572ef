//! DLI exports (`dli_exports`): the records of export requests and their states, and the reads
//! an export job makes of one user's versions and mail in keyset pages (the activity records
//! are read by `audit::of_user_after`).

use crate::emails::{Email, Entry};
use crate::filter::Page;
use crate::models::FileVersion;
use crate::schema::{dli_exports, emails, file_versions, mailbox_entries};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

/// One export as stored.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = dli_exports)]
pub struct Export {
    pub id: i64,
    /// The user the export is about.
    pub user_id: String,
    /// The administrator who asked for it.
    pub requested_by: String,
    /// `activities`, `files` or `emails`.
    pub kind: String,
    /// `YYYY-MM-DD`, both included.
    pub start_day: String,
    pub end_day: String,
    /// `inprocess`, `completed`, `nodata` or `error`.
    pub status: String,
    pub attempts: i64,
    pub file_name: Option<String>,
    pub blob_id: Option<String>,
    pub size: Option<i64>,
    pub generated_at: Option<i64>,
    pub created_at: i64,
}

/// A new export, `inprocess`.
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = dli_exports)]
pub struct NewExport {
    pub user_id: String,
    pub requested_by: String,
    pub kind: String,
    pub start_day: String,
    pub end_day: String,
    pub status: String,
    pub created_at: i64,
}

pub fn insert(conn: &mut DbConn, e: &NewExport) -> StoreResult<Export> {
    Ok(db_run!(conn => diesel::insert_into(dli_exports::table)
        .values(e)
        .returning(Export::as_returning())
        .get_result(conn))?)
}

pub fn by_id(conn: &mut DbConn, id: i64) -> StoreResult<Option<Export>> {
    Ok(db_run!(conn => dli_exports::table
        .find(id)
        .select(Export::as_select())
        .first(conn)
        .optional())?)
}

/// What the list of exports selects: users (none: all), statuses equal to one of `statuses`
/// (none: any), a status containing `status_contains`.
#[derive(Debug, Clone, Default)]
pub struct ExportQuery {
    pub user_ids: Vec<String>,
    pub statuses: Vec<String>,
    pub status_contains: Option<String>,
    pub offset: i64,
    pub limit: i64,
}

/// A page of exports, newest first.
pub fn list(conn: &mut DbConn, q: &ExportQuery) -> StoreResult<Page<Export>> {
    db_run!(conn => {
        let build = || {
            let mut b = dli_exports::table.into_boxed();
            if !q.user_ids.is_empty() {
                b = b.filter(dli_exports::user_id.eq_any(q.user_ids.clone()));
            }
            if !q.statuses.is_empty() {
                b = b.filter(dli_exports::status.eq_any(q.statuses.clone()));
            }
            if let Some(s) = &q.status_contains {
                b = b.filter(
                    dli_exports::status
                        .like(format!("%{}%", crate::like_escape(&s.to_lowercase())))
                        .escape('\\'),
                );
            }
            b
        };
        let total: i64 = build().count().get_result(conn)?;
        let items = build()
            .order(dli_exports::id.desc())
            .offset(q.offset)
            .limit(q.limit)
            .select(Export::as_select())
            .load(conn)?;
        Ok(Page { items, total })
    })
}

pub fn delete(conn: &mut DbConn, id: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(dli_exports::table.find(id)).execute(conn))?)
}

/// Ends an export that is still `inprocess`: `completed` with its file, or `nodata`/`error`
/// without one. Answers false when it was deleted or had ended meanwhile.
pub fn finish(
    conn: &mut DbConn,
    id: i64,
    status: &str,
    file: Option<(&str, &str, i64)>,
    t: i64,
) -> StoreResult<bool> {
    let (name, blob, size) = match file {
        Some((n, b, s)) => (Some(n.to_string()), Some(b.to_string()), Some(s)),
        None => (None, None, None),
    };
    let n = db_run!(conn => diesel::update(
            dli_exports::table
                .find(id)
                .filter(dli_exports::status.eq("inprocess")))
        .set((
            dli_exports::status.eq(status),
            dli_exports::file_name.eq(name.clone()),
            dli_exports::blob_id.eq(blob.clone()),
            dli_exports::size.eq(size),
            dli_exports::generated_at.eq(Some(t)),
        ))
        .execute(conn))?;
    Ok(n == 1)
}

/// Counts one failed attempt of an export still `inprocess`; answers the failures so far.
pub fn failed_attempt(conn: &mut DbConn, id: i64) -> StoreResult<i64> {
    db_run!(conn => diesel::update(
            dli_exports::table
                .find(id)
                .filter(dli_exports::status.eq("inprocess")))
        .set(dli_exports::attempts.eq(dli_exports::attempts + 1))
        .execute(conn))?;
    Ok(by_id(conn, id)?.map(|e| e.attempts).unwrap_or(0))
}

/// The versions `user_id` made in `[since, until)` after `after` (its creation time and id), in
/// creation order, at most `limit`: a `files` export reads them in such pages.
pub fn versions_by(
    conn: &mut DbConn,
    user_id: &str,
    since: i64,
    until: i64,
    after: Option<&(i64, String)>,
    limit: i64,
) -> StoreResult<Vec<FileVersion>> {
    Ok(db_run!(conn => {
        let mut b = file_versions::table
            .into_boxed()
            .filter(file_versions::creator_id.eq(user_id.to_string()))
            .filter(file_versions::created_at.ge(since))
            .filter(file_versions::created_at.lt(until));
        if let Some((t, id)) = after {
            b = b.filter(
                file_versions::created_at.gt(*t).or(file_versions::created_at
                    .eq(*t)
                    .and(file_versions::id.gt(id.clone()))),
            );
        }
        b.order((file_versions::created_at.asc(), file_versions::id.asc()))
            .limit(limit)
            .select(FileVersion::as_select())
            .load(conn)
    })?)
}

/// The mailbox entries of `user_id` (mail sent or received, in the trash too) dated in
/// `[since, until)` after `after` (date, email id, role), with their emails, in date order, at
/// most `limit`: an `emails` export reads them in such pages.
pub fn mail_of(
    conn: &mut DbConn,
    user_id: &str,
    since: i64,
    until: i64,
    after: Option<&(i64, String, String)>,
    limit: i64,
) -> StoreResult<Vec<(Entry, Email)>> {
    Ok(db_run!(conn => {
        let mut b = mailbox_entries::table
            .inner_join(emails::table)
            .into_boxed()
            .filter(mailbox_entries::user_id.eq(user_id.to_string()))
            .filter(mailbox_entries::created_at.ge(since))
            .filter(mailbox_entries::created_at.lt(until));
        if let Some((t, id, role)) = after {
            b = b.filter(
                mailbox_entries::created_at.gt(*t).or(mailbox_entries::created_at
                    .eq(*t)
                    .and(
                        mailbox_entries::email_id.gt(id.clone()).or(mailbox_entries::email_id
                            .eq(id.clone())
                            .and(mailbox_entries::role.gt(role.clone()))),
                    )),
            );
        }
        b.order((
            mailbox_entries::created_at.asc(),
            mailbox_entries::email_id.asc(),
            mailbox_entries::role.asc(),
        ))
        .limit(limit)
        .select((Entry::as_select(), Email::as_select()))
        .load(conn)
    })?)
}
