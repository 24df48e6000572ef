//! The event outbox: every state change writes its event here in the same transaction.

use crate::models::{Event, NewEvent};
use crate::schema::events::dsl as e;
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

/// Records an event, and wakes the webhook pumps once the transaction commits.
pub fn insert(conn: &mut DbConn, ev: &NewEvent) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(e::events).values(ev).execute(conn))?;
    crate::wake::announce(conn, crate::wake::Work::Deliveries)
}

/// Events after `after_seq`, oldest first.
pub fn after(conn: &mut DbConn, after_seq: i64, limit: i64) -> StoreResult<Vec<Event>> {
    Ok(db_run!(conn => e::events
        .filter(e::seq.gt(after_seq))
        .order(e::seq.asc())
        .limit(limit)
        .select(Event::as_select())
        .load(conn))?)
}
