//! Locations (server sites of a deployment).

use crate::filter::Page;
use crate::models::{Location, NewLocation};
use crate::schema::locations;
use crate::{db_run, order_by, DbConn, StoreResult};
use coffer_domain::list::ListQuery;
use diesel::prelude::*;

pub fn insert(conn: &mut DbConn, l: &NewLocation) -> StoreResult<i64> {
    Ok(db_run!(conn => diesel::insert_into(locations::table)
        .values(l)
        .returning(locations::id)
        .get_result(conn))?)
}

pub fn by_id(conn: &mut DbConn, id: i64) -> StoreResult<Option<Location>> {
    Ok(
        db_run!(conn => locations::table.find(id).select(Location::as_select()).first(conn).optional())?,
    )
}

pub fn by_name(conn: &mut DbConn, name: &str) -> StoreResult<Option<Location>> {
    Ok(db_run!(conn => locations::table
        .filter(locations::name.eq(name))
        .select(Location::as_select())
        .first(conn)
        .optional())?)
}

pub fn delete(conn: &mut DbConn, id: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(locations::table.find(id)).execute(conn))?)
}

pub fn list(conn: &mut DbConn, q: &ListQuery) -> StoreResult<Page<Location>> {
    db_run!(conn => {
        let total: i64 = locations::table.count().get_result(conn)?;
        let mut b = locations::table.into_boxed();
        order_by!(b, q.order.1, locations::name);
        let items = b.then_order_by(locations::id.asc())
            .offset(q.offset)
            .limit(q.limit)
            .select(Location::as_select())
            .load(conn)?;
        Ok(Page { items, total })
    })
}
