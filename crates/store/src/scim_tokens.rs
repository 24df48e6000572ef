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
