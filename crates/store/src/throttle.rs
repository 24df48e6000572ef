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

/// Counts one use of `key` (e.g. a text message sent) in a window of `window_secs` seconds,
/// unless the window already holds `max`: `None` when counted, else the start of the full
/// window. Each step is one conditional statement, so concurrent callers on any node are counted
/// one after another and never exceed `max` together.
pub fn spend(
    conn: &mut DbConn,
    key: &str,
    max: i32,
    window_secs: i64,
    now: i64,
) -> StoreResult<Option<i64>> {
    let cutoff = now - window_secs;
    for _ in 0..3 {
        // The current window has room: one more.
        let n = db_run!(conn => diesel::update(
            auth_failures::table
                .find(key)
                .filter(auth_failures::window_start.gt(cutoff))
                .filter(auth_failures::failures.lt(max)),
        )
        .set(auth_failures::failures.eq(auth_failures::failures + 1))
        .execute(conn))?;
        if n == 1 {
            return Ok(None);
        }
        // The window is over: a new one starts with this use.
        let n = db_run!(conn => diesel::update(
            auth_failures::table
                .find(key)
                .filter(auth_failures::window_start.le(cutoff)),
        )
        .set((
            auth_failures::failures.eq(1),
            auth_failures::window_start.eq(now),
            auth_failures::locked_until.eq(None::<i64>),
        ))
        .execute(conn))?;
        if n == 1 {
            return Ok(None);
        }
        let n = db_run!(conn => diesel::insert_into(auth_failures::table)
            .values((
                auth_failures::key.eq(key),
                auth_failures::failures.eq(1),
                auth_failures::window_start.eq(now),
                auth_failures::locked_until.eq(None::<i64>),
            ))
            .on_conflict_do_nothing()
            .execute(conn))?;
        if n == 1 {
            return Ok(None);
        }
        match get(conn, key)? {
            Some((used, start, _)) if start > cutoff && used >= max => return Ok(Some(start)),
            // Another caller changed the row between two steps: try again.
            _ => {}
        }
    }
    Ok(Some(now))
}
