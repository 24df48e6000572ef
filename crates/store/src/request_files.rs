//! Request-file links (`request_files`), the files they offer (`request_file_sources`) and what
//! arrived through them (`request_file_uploads`).

use crate::models::{NewRequestFile, RequestFile, RequestFileUpload};
use crate::schema::{request_file_sources, request_file_uploads, request_files};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

pub fn insert(conn: &mut DbConn, r: &NewRequestFile) -> StoreResult<i64> {
    Ok(db_run!(conn => diesel::insert_into(request_files::table)
        .values(r)
        .returning(request_files::id)
        .get_result(conn))?)
}

pub fn by_id(conn: &mut DbConn, id: i64) -> StoreResult<Option<RequestFile>> {
    Ok(db_run!(conn => request_files::table
        .find(id)
        .select(RequestFile::as_select())
        .first(conn)
        .optional())?)
}

/// The link whose reference hashes to `hash` (one indexed lookup).
pub fn by_ref_hash(conn: &mut DbConn, hash: &str) -> StoreResult<Option<RequestFile>> {
    Ok(db_run!(conn => request_files::table
        .filter(request_files::ref_hash.eq(hash))
        .select(RequestFile::as_select())
        .first(conn)
        .optional())?)
}

/// Withdraws a link: it takes nothing more, and the mail that carries it and was not sent yet
/// never is (see [`crate::mail::cancel`]). Returns 0 when it was withdrawn already.
pub fn withdraw(conn: &mut DbConn, id: i64, t: i64) -> StoreResult<usize> {
    let n = db_run!(conn => diesel::update(request_files::table
        .find(id)
        .filter(request_files::withdrawn_at.is_null()))
        .set(request_files::withdrawn_at.eq(t))
        .execute(conn))?;
    if n > 0 {
        if let Some(link) = by_id(conn, id)? {
            crate::mail::cancel(conn, &link.email_id, &link.recipient, t, WITHDRAWN)?;
        }
    }
    Ok(n)
}

/// The reason a link's unsent mail keeps in `last_error`.
pub const WITHDRAWN: &str = "the link in the message was withdrawn before it was sent";

/// The links a user made or that ask for them, still working at `t`: neither withdrawn nor
/// past their last second.
pub fn live_of_user(conn: &mut DbConn, user_id: &str, t: i64) -> StoreResult<Vec<RequestFile>> {
    Ok(db_run!(conn => request_files::table
        .filter(
            request_files::actor_id
                .eq(user_id)
                .or(request_files::requestor_id.eq(user_id)),
        )
        .filter(request_files::withdrawn_at.is_null())
        .filter(request_files::expire_at.ge(t))
        .order(request_files::id.asc())
        .select(RequestFile::as_select())
        .load(conn))?)
}

/// Records the email the uploads went out in; false when another request did it first.
pub fn set_reply(conn: &mut DbConn, id: i64, email_id: &str) -> StoreResult<bool> {
    Ok(db_run!(conn => diesel::update(request_files::table
        .find(id)
        .filter(request_files::reply_email_id.is_null()))
        .set(request_files::reply_email_id.eq(email_id))
        .execute(conn))?
        == 1)
}

pub fn add_source(conn: &mut DbConn, id: i64, file_id: &str) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(request_file_sources::table)
        .values((
            request_file_sources::request_file_id.eq(id),
            request_file_sources::file_id.eq(file_id),
        ))
        .execute(conn))?;
    Ok(())
}

/// The files a link offers, in the order of their ids.
pub fn sources(conn: &mut DbConn, id: i64) -> StoreResult<Vec<String>> {
    Ok(db_run!(conn => request_file_sources::table
        .filter(request_file_sources::request_file_id.eq(id))
        .order(request_file_sources::file_id.asc())
        .select(request_file_sources::file_id)
        .load(conn))?)
}

pub fn add_upload(
    conn: &mut DbConn,
    id: i64,
    file_id: &str,
    version_id: &str,
    name: &str,
    t: i64,
) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(request_file_uploads::table)
        .values((
            request_file_uploads::request_file_id.eq(id),
            request_file_uploads::file_id.eq(file_id),
            request_file_uploads::version_id.eq(version_id),
            request_file_uploads::name.eq(name),
            request_file_uploads::created_at.eq(t),
        ))
        .execute(conn))?;
    Ok(())
}

/// What arrived through a link, oldest first.
pub fn uploads(conn: &mut DbConn, id: i64) -> StoreResult<Vec<RequestFileUpload>> {
    Ok(db_run!(conn => request_file_uploads::table
        .filter(request_file_uploads::request_file_id.eq(id))
        .order(request_file_uploads::id.asc())
        .select(RequestFileUpload::as_select())
        .load(conn))?)
}

/// Forgets the uploads of one file through a link; returns how many there were.
pub fn delete_uploads_of(conn: &mut DbConn, id: i64, file_id: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(request_file_uploads::table
        .filter(request_file_uploads::request_file_id.eq(id))
        .filter(request_file_uploads::file_id.eq(file_id)))
        .execute(conn))?)
}
