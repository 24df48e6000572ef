//! System settings: a key/value table of JSON values.

use crate::schema::system_settings::dsl as s;
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

pub fn get(conn: &mut DbConn, key: &str) -> StoreResult<Option<String>> {
    Ok(
        db_run!(conn => s::system_settings.filter(s::key.eq(key)).select(s::value).first::<String>(conn).optional())?,
    )
}

pub fn put(conn: &mut DbConn, key: &str, value: &str, now: i64) -> StoreResult<()> {
    let updated = db_run!(conn => diesel::update(s::system_settings.filter(s::key.eq(key)))
        .set((s::value.eq(value), s::updated_at.eq(now)))
        .execute(conn))?;
    if updated == 0 {
        db_run!(conn => diesel::insert_into(s::system_settings)
            .values((s::key.eq(key), s::value.eq(value), s::updated_at.eq(now)))
            .execute(conn))?;
    }
    Ok(())
}

/// Inserts the key only when it is absent; returns whether it was inserted. Used as a
/// once-only marker (e.g. first-start bootstrap) inside a write transaction.
pub fn insert_if_absent(conn: &mut DbConn, key: &str, value: &str, now: i64) -> StoreResult<bool> {
    if get(conn, key)?.is_some() {
        return Ok(false);
    }
    db_run!(conn => diesel::insert_into(s::system_settings)
        .values((s::key.eq(key), s::value.eq(value), s::updated_at.eq(now)))
        .execute(conn))?;
    Ok(true)
}
