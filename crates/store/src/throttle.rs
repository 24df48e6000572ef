//! Counters of failed sign-ins (per account, per client address), shared by every node.

use crate::schema::auth_failures;
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

/// `(failures in the window, window start, locked until)` for a key.
pub fn get(conn: &mut DbConn, key: &str) -> StoreResult<Option<(i32, i64, Option<i64>)>> {
    Ok(db_run!(conn => auth_failures::table
        .find(key)
        .select((auth_failures::failures, auth_failures::window_start, auth_failures::locked_until))
        .first(conn)
        .optional())?)
}

pub fn put(
    conn: &mut DbConn,
    key: &str,
    failures: i32,
    window_start: i64,
    locked_until: Option<i64>,
) -> StoreResult<()> {
    let n = db_run!(conn => diesel::update(auth_failures::table.find(key))
        .set((
            auth_failures::failures.eq(failures),
            auth_failures::window_start.eq(window_start),
            auth_failures::locked_until.eq(locked_until),
        ))
        .execute(conn))?;
    if n == 0 {
        db_run!(conn => diesel::insert_into(auth_failures::table)
            .values((
                auth_failures::key.eq(key),
                auth_failures::failures.eq(failures),
                auth_failures::window_start.eq(window_start),
                auth_failures::locked_until.eq(locked_until),
            ))
            .on_conflict_do_nothing()
            .execute(conn))?;
    }
    Ok(())
}

pub fn clear(conn: &mut DbConn, key: &str) -> StoreResult<()> {
    db_run!(conn => diesel::delete(auth_failures::table.find(key)).execute(conn))?;
    Ok(())
}
