//! Password-reset links: each unused link's token hash, its user and its expiry.

use crate::schema::password_resets;
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

/// Stores a new reset link for `user_id` in place of any earlier one (a new request supersedes
/// the links sent before).
pub fn replace(
    conn: &mut DbConn,
    user_id: &str,
    token_hash: &str,
    now: i64,
    expires_at: i64,
) -> StoreResult<()> {
    db_run!(conn => diesel::delete(password_resets::table.filter(password_resets::user_id.eq(user_id)))
        .execute(conn))?;
    db_run!(conn => diesel::insert_into(password_resets::table)
        .values((
            password_resets::token_hash.eq(token_hash),
            password_resets::user_id.eq(user_id),
            password_resets::created_at.eq(now),
            password_resets::expires_at.eq(expires_at),
        ))
        .execute(conn))?;
    Ok(())
}

/// The user of a link that has not expired at `now`, if any.
pub fn live_user(conn: &mut DbConn, token_hash: &str, now: i64) -> StoreResult<Option<String>> {
    Ok(db_run!(conn => password_resets::table
        .find(token_hash)
        .filter(password_resets::expires_at.gt(now))
        .select(password_resets::user_id)
        .first::<String>(conn)
        .optional())?)
}

/// Uses up a live link: deletes it and every other link of its user, in one conditional
/// statement first, so that of two concurrent uses exactly one finds the row. Returns the user
/// when this call used it.
pub fn consume(conn: &mut DbConn, token_hash: &str, now: i64) -> StoreResult<Option<String>> {
    let user: Option<String> = db_run!(conn => diesel::delete(password_resets::table
            .find(token_hash)
            .filter(password_resets::expires_at.gt(now)))
        .returning(password_resets::user_id)
        .get_result::<String>(conn)
        .optional())?;
    if let Some(u) = &user {
        db_run!(conn => diesel::delete(password_resets::table.filter(password_resets::user_id.eq(u)))
            .execute(conn))?;
    }
    Ok(user)
}

/// Housekeeping: deletes links that expired before `before`.
pub fn purge_expired(conn: &mut DbConn, before: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(password_resets::table
            .filter(password_resets::expires_at.lt(before)))
        .execute(conn))?)
}
