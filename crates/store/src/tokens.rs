//! Access and refresh tokens, stored only as hashes. Tokens issued together (one sign-in, and
//! every rotation of its refresh token) share a family, revoked as one.

use crate::models::{AccessToken, Client, RefreshToken, User};
use crate::schema::{access_tokens, clients, refresh_tokens, users};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

pub fn insert_access(conn: &mut DbConn, t: &AccessToken) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(access_tokens::table).values(t).execute(conn))?;
    Ok(())
}

pub fn insert_refresh(conn: &mut DbConn, t: &RefreshToken) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(refresh_tokens::table).values(t).execute(conn))?;
    Ok(())
}

/// An access token with its user and client, in one query (the hot path of every API call).
pub fn access_with_owner(
    conn: &mut DbConn,
    hash: &str,
) -> StoreResult<Option<(AccessToken, User, Client)>> {
    Ok(db_run!(conn => access_tokens::table
        .inner_join(users::table)
        .inner_join(clients::table)
        .filter(access_tokens::token_hash.eq(hash))
        .select((AccessToken::as_select(), User::as_select(), Client::as_select()))
        .first(conn)
        .optional())?)
}

pub fn access_by_hash(conn: &mut DbConn, hash: &str) -> StoreResult<Option<AccessToken>> {
    Ok(
        db_run!(conn => access_tokens::table.find(hash).select(AccessToken::as_select()).first(conn).optional())?,
    )
}

pub fn refresh_by_hash(conn: &mut DbConn, hash: &str) -> StoreResult<Option<RefreshToken>> {
    Ok(
        db_run!(conn => refresh_tokens::table.find(hash).select(RefreshToken::as_select()).first(conn).optional())?,
    )
}

/// A refresh token, locked until the transaction ends on PostgreSQL, so that concurrent uses of
/// one token run one after the other (the first rotates it; the others find it used and revoke
/// its family) instead of racing into a deadlock. SQLite's single writer serialises them anyway.
pub fn refresh_for_update(conn: &mut DbConn, hash: &str) -> StoreResult<Option<RefreshToken>> {
    Ok(match conn {
        DbConn::Pg(c) => refresh_tokens::table
            .find(hash)
            .select(RefreshToken::as_select())
            .for_update()
            .first(c)
            .optional()?,
        DbConn::Sqlite(c) => refresh_tokens::table
            .find(hash)
            .select(RefreshToken::as_select())
            .first(c)
            .optional()?,
    })
}

/// Marks a refresh token used; 0 when it was used (or revoked) already, which makes two
/// concurrent uses of one token a replay rather than two rotations.
pub fn mark_refresh_used(conn: &mut DbConn, hash: &str, now: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(refresh_tokens::table
            .filter(refresh_tokens::token_hash.eq(hash))
            .filter(refresh_tokens::used_at.is_null())
            .filter(refresh_tokens::revoked.eq(false)))
        .set(refresh_tokens::used_at.eq(now))
        .execute(conn))?)
}

/// Revokes every token of a family; returns how many access tokens were live.
pub fn revoke_family(conn: &mut DbConn, family_id: &str) -> StoreResult<usize> {
    db_run!(conn => {
        let n = diesel::update(access_tokens::table
                .filter(access_tokens::family_id.eq(family_id))
                .filter(access_tokens::revoked.eq(false)))
            .set(access_tokens::revoked.eq(true))
            .execute(conn)?;
        diesel::update(refresh_tokens::table.filter(refresh_tokens::family_id.eq(family_id)))
            .set(refresh_tokens::revoked.eq(true))
            .execute(conn)?;
        Ok(n)
    })
}

/// Revokes every token of a user (deletion, deactivation, password change).
pub fn revoke_user(conn: &mut DbConn, user_id: &str) -> StoreResult<usize> {
    db_run!(conn => {
        let n = diesel::update(access_tokens::table
                .filter(access_tokens::user_id.eq(user_id))
                .filter(access_tokens::revoked.eq(false)))
            .set(access_tokens::revoked.eq(true))
            .execute(conn)?;
        diesel::update(refresh_tokens::table.filter(refresh_tokens::user_id.eq(user_id)))
            .set(refresh_tokens::revoked.eq(true))
            .execute(conn)?;
        Ok(n)
    })
}

/// Revokes every token issued for one device.
pub fn revoke_device(conn: &mut DbConn, device_id: i64) -> StoreResult<usize> {
    db_run!(conn => {
        let n = diesel::update(access_tokens::table.filter(access_tokens::device_id.eq(device_id)))
            .set(access_tokens::revoked.eq(true))
            .execute(conn)?;
        diesel::update(refresh_tokens::table.filter(refresh_tokens::device_id.eq(device_id)))
            .set(refresh_tokens::revoked.eq(true))
            .execute(conn)?;
        Ok(n)
    })
}

/// Deletes tokens that expired before `before` (housekeeping).
pub fn purge_expired(conn: &mut DbConn, before: i64) -> StoreResult<usize> {
    db_run!(conn => {
        let a = diesel::delete(access_tokens::table.filter(access_tokens::expires_at.lt(before))).execute(conn)?;
        let r = diesel::delete(refresh_tokens::table.filter(refresh_tokens::expires_at.lt(before))).execute(conn)?;
        Ok(a + r)
    })
}

/// Revokes every token of a user except those of one family (the session that changed the
/// password keeps working).
pub fn revoke_user_except_family(
    conn: &mut DbConn,
    user_id: &str,
    keep_family: &str,
) -> StoreResult<usize> {
    db_run!(conn => {
        let n = diesel::update(access_tokens::table
                .filter(access_tokens::user_id.eq(user_id))
                .filter(access_tokens::family_id.ne(keep_family))
                .filter(access_tokens::revoked.eq(false)))
            .set(access_tokens::revoked.eq(true))
            .execute(conn)?;
        diesel::update(refresh_tokens::table
                .filter(refresh_tokens::user_id.eq(user_id))
                .filter(refresh_tokens::family_id.ne(keep_family)))
            .set(refresh_tokens::revoked.eq(true))
            .execute(conn)?;
        Ok(n)
    })
}
