//! Recording events in the outbox, inside the transaction of the change they describe.
//! The catalogue of subjects is in `docs/events.md`. Each event also becomes an activity record
//! (`crate::audit::record`).

use crate::{now, Result};
use coffer_store::models::NewEvent;
use coffer_store::DbConn;

/// Records one event. Call it inside the write transaction of the change.
pub fn record(
    conn: &mut DbConn,
    subject: &str,
    actor: Option<&str>,
    data: serde_json::Value,
) -> Result<()> {
    let ev = NewEvent {
        // Time-ordered, like `seq`.
        id: uuid::Uuid::now_v7().to_string(),
        subject: subject.to_string(),
        actor_id: actor.map(str::to_string),
        data: data.to_string(),
        created_at: now(),
    };
    coffer_store::events::insert(conn, &ev)?;
    // The activity log's record of the same change, in the same transaction.
    crate::audit::record::append(conn, subject, actor, &data, true)
}
