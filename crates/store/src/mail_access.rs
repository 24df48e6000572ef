//! What outside recipients of mail use to open it: their one-time codes (one per recipient,
//! stored only as a salted hash) and the short web sessions a correct code opens (stored only as
//! the token's hash). The rules live in `coffer_service::mail::access`.

use crate::schema::{mail_access_codes, mail_access_sessions};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

/// A recipient's code as stored.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = mail_access_codes)]
pub struct Code {
    pub email_id: String,
    pub position: i32,
    pub code_salt: String,
    pub code_hash: String,
    /// The attempts made on it.
    pub attempts: i32,
    pub created_at: i64,
    pub expire_at: i64,
}

/// Stores a new code in place of the recipient's previous one (its attempts start at zero).
pub fn replace_code(conn: &mut DbConn, code: &Code) -> StoreResult<()> {
    delete_code(conn, &code.email_id, code.position)?;
    db_run!(conn => diesel::insert_into(mail_access_codes::table).values(code).execute(conn))?;
    Ok(())
}

/// Counts an attempt on the recipient's live code (not expired, fewer than `max_attempts`
/// attempts so far) and returns it with the attempt counted; `None` when there is no live code.
/// The counting update is one conditional statement, so concurrent attempts are counted one
/// after another and never pass the limit together.
pub fn attempt(
    conn: &mut DbConn,
    email_id: &str,
    position: i32,
    now: i64,
    max_attempts: i32,
) -> StoreResult<Option<Code>> {
    let n = db_run!(conn => diesel::update(mail_access_codes::table
            .find((email_id, position))
            .filter(mail_access_codes::expire_at.gt(now))
            .filter(mail_access_codes::attempts.lt(max_attempts)))
        .set(mail_access_codes::attempts.eq(mail_access_codes::attempts + 1))
        .execute(conn))?;
    if n == 0 {
        return Ok(None);
    }
    Ok(db_run!(conn => mail_access_codes::table
        .find((email_id, position))
        .select(Code::as_select())
        .first(conn)
        .optional())?)
}

/// Forgets the recipient's code (used, or void).
pub fn delete_code(conn: &mut DbConn, email_id: &str, position: i32) -> StoreResult<()> {
    db_run!(conn => diesel::delete(mail_access_codes::table.find((email_id, position))).execute(conn))?;
    Ok(())
}

/// A session as stored.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = mail_access_sessions)]
pub struct Session {
    pub token_hash: String,
    pub email_id: String,
    pub position: i32,
    pub created_at: i64,
    pub expire_at: i64,
}

pub fn insert_session(conn: &mut DbConn, s: &Session) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(mail_access_sessions::table).values(s).execute(conn))?;
    Ok(())
}

/// The live session whose token hashes to `hash`.
pub fn session(conn: &mut DbConn, hash: &str, now: i64) -> StoreResult<Option<Session>> {
    Ok(db_run!(conn => mail_access_sessions::table
        .find(hash)
        .filter(mail_access_sessions::expire_at.gt(now))
        .select(Session::as_select())
        .first(conn)
        .optional())?)
}

/// Forgets the sessions that ended before `now`; how many.
pub fn delete_expired_sessions(conn: &mut DbConn, now: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(mail_access_sessions::table
        .filter(mail_access_sessions::expire_at.le(now)))
        .execute(conn))?)
}
