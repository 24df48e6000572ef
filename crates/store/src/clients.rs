//! OAuth clients.

use crate::filter::Page;
use crate::models::Client;
use crate::schema::clients;
use crate::{db_run, filter_text, order_by, DbConn, StoreResult};
use coffer_domain::client::flag;
use coffer_domain::list::ListQuery;
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::Bool;

pub fn insert(conn: &mut DbConn, c: &Client) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(clients::table).values(c).execute(conn))?;
    Ok(())
}

pub fn update(conn: &mut DbConn, c: &Client) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(clients::table.find(&c.id)).set(c).execute(conn))?)
}

pub fn delete(conn: &mut DbConn, id: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(clients::table.find(id)).execute(conn))?)
}

pub fn by_id(conn: &mut DbConn, id: &str) -> StoreResult<Option<Client>> {
    Ok(db_run!(conn => clients::table.find(id).select(Client::as_select()).first(conn).optional())?)
}

pub fn by_name(conn: &mut DbConn, name: &str) -> StoreResult<Option<Client>> {
    Ok(db_run!(conn => clients::table
        .filter(clients::name.eq(name))
        .select(Client::as_select())
        .first(conn)
        .optional())?)
}

/// Lists clients that are not hidden.
pub fn list(conn: &mut DbConn, q: &ListQuery) -> StoreResult<Page<Client>> {
    let not_hidden = format!("(flag & {}) = 0", flag::HIDDEN);
    db_run!(conn => {
        let build = || {
            let mut b = clients::table.into_boxed().filter(sql::<Bool>(&not_hidden));
            for f in &q.filters {
                match f.field {
                    "name" => filter_text!(b, f, clients::name),
                    "description" => filter_text!(b, f, clients::description),
                    _ => {}
                }
            }
            b
        };
        let total: i64 = build().count().get_result(conn)?;
        let mut b = build();
        match q.order.0 {
            "name" => order_by!(b, q.order.1, clients::name),
            _ => order_by!(b, q.order.1, clients::id),
        }
        let items = b.then_order_by(clients::id.asc())
            .offset(q.offset)
            .limit(q.limit)
            .select(Client::as_select())
            .load(conn)?;
        Ok(Page { items, total })
    })
}
