//! Access and refresh tokens, stored only as hashes. Tokens issued together (one sign-in, and
//! every rotation of its refresh token) share a family, revoked as one. The family row keeps
//! the owner (user, client, device) and the revocation; a token row keeps only its key, scope and
//! lifetime, so that issuing a token writes one b-tree at its right edge (the keys are
//! time-ordered) and revoking anything is an update of family rows.

use crate::models::{
    AccessToken, AccessTokenRow, RefreshToken, RefreshTokenRow, TokenClient, TokenFamily, User,
};
use crate::schema::{access_tokens, clients, refresh_tokens, token_families, users};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

/// Starts a family: the first tokens of a sign-in are issued into it.
pub fn start_family(conn: &mut DbConn, f: &TokenFamily) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(token_families::table).values(f).execute(conn))?;
    Ok(())
}

pub fn insert_access(conn: &mut DbConn, t: &AccessTokenRow) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(access_tokens::table).values(t).execute(conn))?;
    Ok(())
}

pub fn insert_refresh(conn: &mut DbConn, t: &RefreshTokenRow) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(refresh_tokens::table).values(t).execute(conn))?;
    Ok(())
}

/// An access token with its user and client, in one query (the hot path of every API call).
pub fn access_with_owner(
    conn: &mut DbConn,
    hash: &str,
) -> StoreResult<Option<(AccessToken, User, TokenClient)>> {
    let row = db_run!(conn => access_tokens::table
        .inner_join(token_families::table.inner_join(users::table).inner_join(clients::table))
        .filter(access_tokens::token_hash.eq(hash))
        .select((
            AccessTokenRow::as_select(),
            TokenFamily::as_select(),
            User::as_select(),
            TokenClient::as_select(),
        ))
        .first::<(AccessTokenRow, TokenFamily, User, TokenClient)>(conn)
        .optional())?;
    Ok(row.map(|(t, f, u, c)| ((t, f).into(), u, c)))
}

pub fn access_by_hash(conn: &mut DbConn, hash: &str) -> StoreResult<Option<AccessToken>> {
    let row = db_run!(conn => access_tokens::table
        .inner_join(token_families::table)
        .filter(access_tokens::token_hash.eq(hash))
        .select((AccessTokenRow::as_select(), TokenFamily::as_select()))
        .first::<(AccessTokenRow, TokenFamily)>(conn)
        .optional())?;
    Ok(row.map(Into::into))
}

pub fn refresh_by_hash(conn: &mut DbConn, hash: &str) -> StoreResult<Option<RefreshToken>> {
    let row = db_run!(conn => refresh_tokens::table
        .inner_join(token_families::table)
        .filter(refresh_tokens::token_hash.eq(hash))
        .select((RefreshTokenRow::as_select(), TokenFamily::as_select()))
        .first::<(RefreshTokenRow, TokenFamily)>(conn)
        .optional())?;
    Ok(row.map(Into::into))
}

/// A refresh token, with its family row locked until the transaction ends on PostgreSQL, so
/// that concurrent uses of one family run one after the other (the first rotates the token;
/// the others find it used and revoke the family) and a concurrent revocation waits for the
/// rotation. SQLite's single writer serialises them anyway.
pub fn refresh_for_update(conn: &mut DbConn, hash: &str) -> StoreResult<Option<RefreshToken>> {
    let row = match conn {
        DbConn::Pg(c) => refresh_tokens::table
            .inner_join(token_families::table)
            .filter(refresh_tokens::token_hash.eq(hash))
            .select((RefreshTokenRow::as_select(), TokenFamily::as_select()))
            .for_update()
            .first::<(RefreshTokenRow, TokenFamily)>(c)
            .optional()?,
        DbConn::Sqlite(_) => return refresh_by_hash(conn, hash),
    };
    Ok(row.map(Into::into))
}

/// Marks a refresh token used; 0 when it was used already, which makes two concurrent uses of
/// one token a replay rather than two rotations.
pub fn mark_refresh_used(conn: &mut DbConn, hash: &str, now: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(refresh_tokens::table
            .filter(refresh_tokens::token_hash.eq(hash))
            .filter(refresh_tokens::used_at.is_null()))
        .set(refresh_tokens::used_at.eq(now))
        .execute(conn))?)
}

/// Revokes every token of a family; returns 1 when the family was live.
pub fn revoke_family(conn: &mut DbConn, family_id: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(token_families::table
            .filter(token_families::id.eq(family_id))
            .filter(token_families::revoked.eq(false)))
        .set(token_families::revoked.eq(true))
        .execute(conn))?)
}

/// Revokes every token of a user (deletion, deactivation, password change); returns how many
/// families were live.
pub fn revoke_user(conn: &mut DbConn, user_id: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(token_families::table
            .filter(token_families::user_id.eq(user_id))
            .filter(token_families::revoked.eq(false)))
        .set(token_families::revoked.eq(true))
        .execute(conn))?)
}

/// Revokes every token issued for one device.
pub fn revoke_device(conn: &mut DbConn, device_id: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(token_families::table
            .filter(token_families::device_id.eq(device_id))
            .filter(token_families::revoked.eq(false)))
        .set(token_families::revoked.eq(true))
        .execute(conn))?)
}

/// Revokes every token of a user except those of one family (the session that changed the
/// password keeps working); returns how many families were live.
pub fn revoke_user_except_family(
    conn: &mut DbConn,
    user_id: &str,
    keep_family: &str,
) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(token_families::table
            .filter(token_families::user_id.eq(user_id))
            .filter(token_families::id.ne(keep_family))
            .filter(token_families::revoked.eq(false)))
        .set(token_families::revoked.eq(true))
        .execute(conn))?)
}

/// Housekeeping: deletes tokens that expired before `before`, tokens whose family is gone (its
/// user or client was deleted), and then families without tokens.
pub fn purge_expired(conn: &mut DbConn, before: i64) -> StoreResult<usize> {
    db_run!(conn => {
        let families = token_families::table.select(token_families::id);
        let a = diesel::delete(access_tokens::table.filter(
            access_tokens::expires_at.lt(before)
                .or(diesel::dsl::not(access_tokens::family_id.eq_any(families))),
        ))
        .execute(conn)?;
        let r = diesel::delete(refresh_tokens::table.filter(
            refresh_tokens::expires_at.lt(before)
                .or(diesel::dsl::not(refresh_tokens::family_id.eq_any(families))),
        ))
        .execute(conn)?;
        diesel::delete(token_families::table.filter(diesel::dsl::not(
            token_families::id
                .eq_any(access_tokens::table.select(access_tokens::family_id))
                .or(token_families::id
                    .eq_any(refresh_tokens::table.select(refresh_tokens::family_id))),
        )))
        .execute(conn)?;
        Ok(a + r)
    })
}
