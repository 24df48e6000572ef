//! Recording events in the outbox, inside the transaction of the change they describe.
//! The catalogue of subjects is in `docs/events.md`. Each event also becomes an activity record
//! (`crate::audit::record`).
//!
//! A front-end other than REST (the SFTP server) names itself in its context
//! (`Ctx::protocol`); the context's transactions then note it on every event they record, as
//! `"protocol"` in the event's data, so that the same change records the same event whichever
//! way it came, and says which.

use crate::{now, Result};
use coffer_store::models::NewEvent;
use coffer_store::DbConn;
use std::cell::Cell;

thread_local! {
    /// The protocol of the transaction running on this thread, if not REST.
    static PROTOCOL: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Runs `f` with `protocol` noted on the events it records (on this thread, where the
/// transaction's closure runs, whichever thread that is).
pub fn noting_protocol<T>(protocol: Option<&'static str>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<&'static str>);
    impl Drop for Restore {
        fn drop(&mut self) {
            PROTOCOL.with(|p| p.set(self.0));
        }
    }
    let _restore = Restore(PROTOCOL.with(|p| p.replace(protocol)));
    f()
}

/// Records one event. Call it inside the write transaction of the change.
pub fn record(
    conn: &mut DbConn,
    subject: &str,
    actor: Option<&str>,
    mut data: serde_json::Value,
) -> Result<()> {
    if let (Some(p), Some(map)) = (PROTOCOL.with(Cell::get), data.as_object_mut()) {
        map.insert("protocol".into(), p.into());
    }
    let ev = NewEvent {
        // Time-ordered, like `seq`.
        id: uuid::Uuid::now_v7().to_string(),
        subject: subject.to_string(),
        actor_id: actor.map(str::to_string),
        data: data.to_string(),
        created_at: now(),
    };
    coffer_store::events::insert(conn, &ev)?;
    // The activity log's record of the same change, in the same transaction, with the data as
    // serialised for the event (the same text: serialised once).
    crate::audit::record::append_serialized(conn, subject, actor, &data, ev.data, true)
}
