//! Interactive sessions, stored by the hash of their token.

use crate::models::{User, WebSession};
use crate::schema::{clients, users, web_sessions};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

pub fn insert(conn: &mut DbConn, s: &WebSession) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(web_sessions::table).values(s).execute(conn))?;
    Ok(())
}

/// A session with its user.
pub fn with_user(conn: &mut DbConn, id_hash: &str) -> StoreResult<Option<(WebSession, User)>> {
    Ok(db_run!(conn => web_sessions::table
        .inner_join(users::table)
        .filter(web_sessions::id_hash.eq(id_hash))
        .select((WebSession::as_select(), User::as_select()))
        .first(conn)
        .optional())?)
}

pub fn extend(conn: &mut DbConn, id_hash: &str, expires_at: i64) -> StoreResult<usize> {
    Ok(
        db_run!(conn => diesel::update(web_sessions::table.find(id_hash))
        .set(web_sessions::expires_at.eq(expires_at))
        .execute(conn))?,
    )
}

pub fn delete(conn: &mut DbConn, id_hash: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(web_sessions::table.find(id_hash)).execute(conn))?)
}

/// Ends a user's sessions, except one (the session that changed the password).
pub fn delete_for_user(conn: &mut DbConn, user_id: &str, keep: Option<&str>) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(web_sessions::table
            .filter(web_sessions::user_id.eq(user_id))
            .filter(web_sessions::id_hash.ne(keep.unwrap_or(""))))
        .execute(conn))?)
}

/// The first-party web client, on whose behalf sessions call the API.
pub fn web_client_id(conn: &mut DbConn) -> StoreResult<Option<String>> {
    Ok(db_run!(conn => clients::table
        .filter(clients::builtin.eq(true))
        .order(clients::created_at.asc())
        .select(clients::id)
        .first(conn)
        .optional())?)
}

/// The session's password change is done: it may do everything again.
pub fn activate(conn: &mut DbConn, id_hash: &str) -> StoreResult<usize> {
    Ok(
        db_run!(conn => diesel::update(web_sessions::table.find(id_hash))
        .set(web_sessions::state.eq("active"))
        .execute(conn))?,
    )
}

pub fn set_state(conn: &mut DbConn, id_hash: &str, state: &str) -> StoreResult<usize> {
    Ok(
        db_run!(conn => diesel::update(web_sessions::table.find(id_hash))
        .set(web_sessions::state.eq(state))
        .execute(conn))?,
    )
}
