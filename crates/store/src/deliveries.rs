//! Webhook deliveries: fan-out from the event outbox, claiming due deliveries with a lease, and
//! recording each attempt. On PostgreSQL, rows are claimed with `FOR UPDATE SKIP LOCKED`, so any
//! number of nodes can run the workers without delivering one event twice in normal operation.

use crate::models::{Attempt, Delivery, Event, NewAttempt, Webhook};
use crate::schema::{events, users, webhook_attempts, webhook_deliveries, webhooks};
use crate::{DbConn, StoreResult};
use diesel::prelude::*;

/// The condition of the partial index `events_pending`, written out literally: a planner uses a
/// partial index only for a query that states its condition, and a bound `false` does not.
fn undispatched() -> diesel::expression::SqlLiteral<diesel::sql_types::Bool> {
    diesel::dsl::sql::<diesel::sql_types::Bool>("dispatched = FALSE")
}

/// Events not yet fanned out, oldest first; locked (skipping rows other nodes hold) on
/// PostgreSQL until the transaction ends.
pub fn pending_events(conn: &mut DbConn, limit: i64) -> StoreResult<Vec<Event>> {
    Ok(match conn {
        DbConn::Pg(c) => events::table
            .filter(undispatched())
            .order(events::seq.asc())
            .limit(limit)
            .select(Event::as_select())
            .for_update()
            .skip_locked()
            .load(c)?,
        DbConn::Sqlite(c) => events::table
            .filter(undispatched())
            .order(events::seq.asc())
            .limit(limit)
            .select(Event::as_select())
            .load(c)?,
    })
}

pub fn mark_dispatched(conn: &mut DbConn, seqs: &[i64]) -> StoreResult<usize> {
    Ok(
        crate::db_run!(conn => diesel::update(events::table.filter(events::seq.eq_any(seqs)))
        .set(events::dispatched.eq(true))
        .execute(conn))?,
    )
}

/// The enabled webhooks with their owner's role.
pub fn enabled_webhooks(conn: &mut DbConn) -> StoreResult<Vec<(Webhook, String)>> {
    Ok(crate::db_run!(conn => webhooks::table
        .inner_join(users::table.on(users::id.eq(webhooks::owner_id)))
        .filter(webhooks::enabled.eq(true))
        .filter(users::deleted.eq(false))
        .filter(users::active.eq(true))
        .select((Webhook::as_select(), users::role))
        .load(conn))?)
}

pub fn insert(conn: &mut DbConn, d: &[Delivery]) -> StoreResult<()> {
    if !d.is_empty() {
        crate::db_run!(conn => diesel::insert_into(webhook_deliveries::table).values(d).execute(conn))?;
    }
    Ok(())
}

/// When the earliest pending delivery no node holds falls due (Unix milliseconds), if any: the
/// pump sleeps until then at most.
pub fn next_due(conn: &mut DbConn, now_ms: i64) -> StoreResult<Option<i64>> {
    Ok(crate::db_run!(conn => webhook_deliveries::table
        .filter(webhook_deliveries::state.eq("pending"))
        .filter(
            webhook_deliveries::lease_until
                .is_null()
                .or(webhook_deliveries::lease_until.lt(now_ms)),
        )
        .select(diesel::dsl::min(webhook_deliveries::next_attempt_at))
        .first::<Option<i64>>(conn))?)
}

/// Claims up to `limit` due deliveries for `lease_ms`, with their webhooks. A delivery whose
/// lease ran out (its node died mid-delivery) is due again.
pub fn claim_due(
    conn: &mut DbConn,
    now_ms: i64,
    lease_ms: i64,
    limit: i64,
) -> StoreResult<Vec<(Delivery, Webhook)>> {
    let due = webhook_deliveries::state
        .eq("pending")
        .and(webhook_deliveries::next_attempt_at.le(now_ms))
        .and(
            webhook_deliveries::lease_until
                .is_null()
                .or(webhook_deliveries::lease_until.lt(now_ms)),
        );
    let ids: Vec<String> = match conn {
        DbConn::Pg(c) => webhook_deliveries::table
            .filter(due)
            .order(webhook_deliveries::next_attempt_at.asc())
            .limit(limit)
            .select(webhook_deliveries::id)
            .for_update()
            .skip_locked()
            .load(c)?,
        DbConn::Sqlite(c) => webhook_deliveries::table
            .filter(due)
            .order(webhook_deliveries::next_attempt_at.asc())
            .limit(limit)
            .select(webhook_deliveries::id)
            .load(c)?,
    };
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(crate::db_run!(conn => {
        diesel::update(webhook_deliveries::table.filter(webhook_deliveries::id.eq_any(&ids)))
            .set(webhook_deliveries::lease_until.eq(now_ms + lease_ms))
            .execute(conn)?;
        webhook_deliveries::table
            .inner_join(webhooks::table)
            .filter(webhook_deliveries::id.eq_any(&ids))
            .select((Delivery::as_select(), Webhook::as_select()))
            .load(conn)?
    }))
}

/// What an attempt came to.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub delivery_id: String,
    pub webhook_id: String,
    pub attempt: i32,
    pub status_code: Option<i32>,
    pub duration_ms: i64,
    pub error: Option<String>,
    /// `pending` (retry at `next_attempt_at`), `delivered` or `failed`.
    pub state: &'static str,
    pub next_attempt_at: i64,
    /// The webhook's `status` and `description` after this attempt.
    pub webhook_status: &'static str,
    pub webhook_description: String,
    /// Whether the webhook is to be disabled (410, or retries exhausted).
    pub disable: bool,
    pub now: i64,
}

/// Records an attempt: the delivery's new state, the log row, and the webhook's status.
pub fn record(conn: &mut DbConn, o: &Outcome) -> StoreResult<()> {
    crate::db_run!(conn => {
        diesel::update(webhook_deliveries::table.find(&o.delivery_id))
            .set((
                webhook_deliveries::state.eq(o.state),
                webhook_deliveries::attempts.eq(o.attempt),
                webhook_deliveries::next_attempt_at.eq(o.next_attempt_at),
                webhook_deliveries::lease_until.eq(None::<i64>),
                webhook_deliveries::last_status.eq(o.status_code),
                webhook_deliveries::last_error.eq(&o.error),
                webhook_deliveries::updated_at.eq(o.now),
            ))
            .execute(conn)?;
        diesel::insert_into(webhook_attempts::table)
            .values(NewAttempt {
                delivery_id: o.delivery_id.clone(),
                attempt: o.attempt,
                status_code: o.status_code,
                duration_ms: o.duration_ms,
                error: o.error.clone(),
                created_at: o.now,
            })
            .execute(conn)?;
        let target = webhooks::table.find(&o.webhook_id);
        if o.disable {
            diesel::update(target)
                .set((
                    webhooks::status.eq(o.webhook_status),
                    webhooks::description.eq(&o.webhook_description),
                    webhooks::enabled.eq(false),
                    webhooks::version.eq(webhooks::version + 1),
                ))
                .execute(conn)?;
        } else {
            diesel::update(target)
                .set((webhooks::status.eq(o.webhook_status), webhooks::description.eq(&o.webhook_description)))
                .execute(conn)?;
        }
        Ok::<(), diesel::result::Error>(())
    })?;
    Ok(())
}

/// Ends the pending deliveries of a webhook that is disabled or gone.
pub fn drop_pending(conn: &mut DbConn, delivery_id: &str, now: i64) -> StoreResult<usize> {
    Ok(
        crate::db_run!(conn => diesel::update(webhook_deliveries::table.find(delivery_id))
        .set((
            webhook_deliveries::state.eq("failed"),
            webhook_deliveries::lease_until.eq(None::<i64>),
            webhook_deliveries::last_error.eq("the webhook is disabled"),
            webhook_deliveries::updated_at.eq(now),
        ))
        .execute(conn))?,
    )
}

/// A webhook's deliveries, newest first.
pub fn for_webhook(
    conn: &mut DbConn,
    webhook_id: &str,
    offset: i64,
    limit: i64,
) -> StoreResult<(Vec<Delivery>, i64)> {
    crate::db_run!(conn => {
        let total: i64 = webhook_deliveries::table
            .filter(webhook_deliveries::webhook_id.eq(webhook_id))
            .count()
            .get_result(conn)?;
        let items = webhook_deliveries::table
            .filter(webhook_deliveries::webhook_id.eq(webhook_id))
            .order((webhook_deliveries::created_at.desc(), webhook_deliveries::id.desc()))
            .offset(offset)
            .limit(limit)
            .select(Delivery::as_select())
            .load(conn)?;
        Ok((items, total))
    })
}

pub fn attempts(conn: &mut DbConn, delivery_ids: &[String]) -> StoreResult<Vec<Attempt>> {
    Ok(crate::db_run!(conn => webhook_attempts::table
        .filter(webhook_attempts::delivery_id.eq_any(delivery_ids))
        .order(webhook_attempts::id.asc())
        .select(Attempt::as_select())
        .load(conn))?)
}

pub fn by_id(conn: &mut DbConn, id: &str) -> StoreResult<Option<Delivery>> {
    Ok(crate::db_run!(conn => webhook_deliveries::table
        .find(id)
        .select(Delivery::as_select())
        .first(conn)
        .optional())?)
}

/// Makes a delivery due again now (redeliver), keeping its id.
pub fn make_due(conn: &mut DbConn, id: &str, now_ms: i64) -> StoreResult<usize> {
    Ok(
        crate::db_run!(conn => diesel::update(webhook_deliveries::table.find(id))
        .set((
            webhook_deliveries::state.eq("pending"),
            webhook_deliveries::next_attempt_at.eq(now_ms),
            webhook_deliveries::lease_until.eq(None::<i64>),
            webhook_deliveries::attempts.eq(0),
        ))
        .execute(conn))?,
    )
}
