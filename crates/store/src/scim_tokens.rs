//! SCIM bearer tokens (stored as hashes).

use crate::models::ScimToken;
use crate::schema::scim_tokens;
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

pub fn insert(conn: &mut DbConn, t: &ScimToken) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(scim_tokens::table).values(t).execute(conn))?;
    Ok(())
}

pub fn by_hash(conn: &mut DbConn, hash: &str) -> StoreResult<Option<ScimToken>> {
    Ok(db_run!(conn => scim_tokens::table
        .filter(scim_tokens::token_hash.eq(hash))
        .select(ScimToken::as_select())
        .first(conn)
        .optional())?)
}

pub fn list(conn: &mut DbConn) -> StoreResult<Vec<ScimToken>> {
    Ok(db_run!(conn => scim_tokens::table
        .order(scim_tokens::created_at.asc())
        .select(ScimToken::as_select())
        .load(conn))?)
}

/// Revokes a token; 0 when there is no such token.
pub fn revoke(conn: &mut DbConn, id: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(scim_tokens::table.find(id))
        .set(scim_tokens::revoked.eq(true))
        .execute(conn))?)
}
