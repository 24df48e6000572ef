//! Webhooks, each owned by the user who created it.

use crate::filter::Page;
use crate::models::Webhook;
use crate::schema::webhooks;
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

pub fn insert(conn: &mut DbConn, w: &Webhook) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(webhooks::table).values(w).execute(conn))?;
    Ok(())
}

/// A webhook of this owner.
pub fn by_id(conn: &mut DbConn, owner_id: &str, id: &str) -> StoreResult<Option<Webhook>> {
    Ok(db_run!(conn => webhooks::table
        .find(id)
        .filter(webhooks::owner_id.eq(owner_id))
        .select(Webhook::as_select())
        .first(conn)
        .optional())?)
}

/// The owner's webhooks, oldest first (ids are time-ordered).
pub fn list(
    conn: &mut DbConn,
    owner_id: &str,
    offset: i64,
    limit: i64,
) -> StoreResult<Page<Webhook>> {
    db_run!(conn => {
        let total: i64 = webhooks::table.filter(webhooks::owner_id.eq(owner_id)).count().get_result(conn)?;
        let items = webhooks::table
            .filter(webhooks::owner_id.eq(owner_id))
            .order(webhooks::id.asc())
            .offset(offset)
            .limit(limit)
            .select(Webhook::as_select())
            .load(conn)?;
        Ok(Page { items, total })
    })
}

/// Replaces a webhook if it is still at `expected_version`; 0 when it changed meanwhile.
pub fn update_if_version(
    conn: &mut DbConn,
    w: &Webhook,
    expected_version: i64,
) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(webhooks::table
            .filter(webhooks::id.eq(&w.id))
            .filter(webhooks::version.eq(expected_version)))
        .set(w)
        .execute(conn))?)
}

pub fn delete(conn: &mut DbConn, owner_id: &str, id: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(webhooks::table
            .filter(webhooks::id.eq(id))
            .filter(webhooks::owner_id.eq(owner_id)))
        .execute(conn))?)
}
