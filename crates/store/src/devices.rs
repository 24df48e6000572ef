//! Devices registered by users through clients, with their wipe flag.

use crate::filter::Page;
use crate::models::{Device, NewDevice};
use crate::schema::devices;
use crate::{db_run, filter_text, order_by, DbConn, StoreResult};
use coffer_domain::list::ListQuery;
use diesel::prelude::*;

pub fn insert(conn: &mut DbConn, d: &NewDevice) -> StoreResult<i64> {
    Ok(db_run!(conn => diesel::insert_into(devices::table)
        .values(d)
        .returning(devices::id)
        .get_result(conn))?)
}

/// Inserts the device unless the same (user, client, install tag) exists; returns the id of the
/// one stored either way and whether it was inserted now. Safe when two token requests register
/// the same device at once.
pub fn insert_or_get(conn: &mut DbConn, d: &NewDevice) -> StoreResult<(i64, bool)> {
    let inserted = db_run!(conn => diesel::insert_into(devices::table)
        .values(d)
        .on_conflict((devices::user_id, devices::client_id, devices::install_tag_id))
        .do_nothing()
        .execute(conn))?;
    let found = find(conn, &d.user_id, &d.client_id, &d.install_tag_id)?;
    let id = found
        .map(|d| d.id)
        .ok_or(crate::StoreError::Diesel(diesel::result::Error::NotFound))?;
    Ok((id, inserted == 1))
}

pub fn by_id(conn: &mut DbConn, id: i64) -> StoreResult<Option<Device>> {
    Ok(db_run!(conn => devices::table.find(id).select(Device::as_select()).first(conn).optional())?)
}

pub fn find(
    conn: &mut DbConn,
    user_id: &str,
    client_id: &str,
    install_tag_id: &str,
) -> StoreResult<Option<Device>> {
    Ok(db_run!(conn => devices::table
        .filter(devices::user_id.eq(user_id))
        .filter(devices::client_id.eq(client_id))
        .filter(devices::install_tag_id.eq(install_tag_id))
        .select(Device::as_select())
        .first(conn)
        .optional())?)
}

/// The devices with this install tag, restricted to one user when given.
pub fn by_install_tag(
    conn: &mut DbConn,
    install_tag_id: &str,
    user_id: Option<&str>,
) -> StoreResult<Vec<Device>> {
    db_run!(conn => {
        let mut b = devices::table.into_boxed().filter(devices::install_tag_id.eq(install_tag_id));
        if let Some(u) = user_id {
            b = b.filter(devices::user_id.eq(u.to_string()));
        }
        Ok(b.order(devices::id.asc()).select(Device::as_select()).load(conn)?)
    })
}

pub fn set_wipe_flag(conn: &mut DbConn, id: i64, flag: i32, now: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(devices::table.find(id))
        .set((devices::wipe_flag.eq(flag), devices::updated_at.eq(now)))
        .execute(conn))?)
}

/// Requests a wipe (0 → 1) of every device of a user that has not been wiped.
pub fn request_wipe_for_user(conn: &mut DbConn, user_id: &str, now: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(devices::table
            .filter(devices::user_id.eq(user_id))
            .filter(devices::wipe_flag.eq(0)))
        .set((devices::wipe_flag.eq(1), devices::updated_at.eq(now)))
        .execute(conn))?)
}

pub fn update_keys(
    conn: &mut DbConn,
    id: i64,
    mobile_key_store: Option<&str>,
    registration_token: Option<&str>,
    now: i64,
) -> StoreResult<usize> {
    db_run!(conn => {
        let mut n = diesel::update(devices::table.find(id)).set(devices::updated_at.eq(now)).execute(conn)?;
        if let Some(k) = mobile_key_store {
            n = diesel::update(devices::table.find(id)).set(devices::mobile_key_store.eq(k)).execute(conn)?;
        }
        if let Some(t) = registration_token {
            n = diesel::update(devices::table.find(id)).set(devices::registration_token.eq(t)).execute(conn)?;
        }
        Ok(n)
    })
}

pub fn rename(conn: &mut DbConn, id: i64, install_name: &str, now: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(devices::table.find(id))
        .set((devices::install_name.eq(install_name), devices::updated_at.eq(now)))
        .execute(conn))?)
}

pub fn delete(conn: &mut DbConn, id: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(devices::table.find(id)).execute(conn))?)
}

/// Lists devices, restricted to one owner when `owner` is given.
pub fn list(conn: &mut DbConn, q: &ListQuery, owner: Option<&str>) -> StoreResult<Page<Device>> {
    db_run!(conn => {
        let build = || {
            let mut b = devices::table.into_boxed();
            if let Some(o) = owner {
                b = b.filter(devices::user_id.eq(o.to_string()));
            }
            for f in &q.filters {
                match f.field {
                    "installTagId" => filter_text!(b, f, devices::install_tag_id),
                    "userId" => filter_text!(b, f, devices::user_id),
                    "clientId" => filter_text!(b, f, devices::client_id),
                    _ => {}
                }
            }
            b
        };
        let total: i64 = build().count().get_result(conn)?;
        let mut b = build();
        match q.order.0 {
            "installTagId" => order_by!(b, q.order.1, devices::install_tag_id),
            "userId" => order_by!(b, q.order.1, devices::user_id),
            "clientId" => order_by!(b, q.order.1, devices::client_id),
            _ => order_by!(b, q.order.1, devices::id),
        }
        let items = b.then_order_by(devices::id.asc())
            .offset(q.offset)
            .limit(q.limit)
            .select(Device::as_select())
            .load(conn)?;
        Ok(Page { items, total })
    })
}
