//! Users' favorite folders and files (`favorites`): whether an object is one, adding, removing,
//! and a user's favorites with their objects.

use crate::models::{Favorite, Object};
use crate::schema::{favorites, objects};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;
use std::collections::HashSet;

/// Adds `object_id` to the user's favorites; `None` when it is one already.
pub fn insert(
    conn: &mut DbConn,
    user_id: &str,
    object_id: &str,
    t: i64,
) -> StoreResult<Option<Favorite>> {
    let n = db_run!(conn => diesel::insert_into(favorites::table)
        .values((
            favorites::user_id.eq(user_id),
            favorites::object_id.eq(object_id),
            favorites::created_at.eq(t),
        ))
        .on_conflict((favorites::user_id, favorites::object_id))
        .do_nothing()
        .execute(conn))?;
    if n == 0 {
        return Ok(None);
    }
    of(conn, user_id, object_id)
}

/// The user's favorite of `object_id`.
pub fn of(conn: &mut DbConn, user_id: &str, object_id: &str) -> StoreResult<Option<Favorite>> {
    Ok(db_run!(conn => favorites::table
        .filter(favorites::user_id.eq(user_id))
        .filter(favorites::object_id.eq(object_id))
        .select(Favorite::as_select())
        .first(conn)
        .optional())?)
}

pub fn by_id(conn: &mut DbConn, id: i64) -> StoreResult<Option<Favorite>> {
    Ok(db_run!(conn => favorites::table
        .find(id)
        .select(Favorite::as_select())
        .first(conn)
        .optional())?)
}

pub fn delete(conn: &mut DbConn, id: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(favorites::table.find(id)).execute(conn))?)
}

/// Which of `ids` are the user's favorites.
pub fn among(conn: &mut DbConn, user_id: &str, ids: &[String]) -> StoreResult<HashSet<String>> {
    let found: Vec<String> = db_run!(conn => favorites::table
        .filter(favorites::user_id.eq(user_id))
        .filter(crate::among::among(favorites::object_id, ids))
        .select(favorites::object_id)
        .load(conn))?;
    Ok(found.into_iter().collect())
}

/// The user's favorites whose objects are neither in the trash nor permanently deleted, each
/// with its object, in the order they were made (the caller decides what the user still sees).
pub fn live_of(conn: &mut DbConn, user_id: &str) -> StoreResult<Vec<(Favorite, Object)>> {
    Ok(db_run!(conn => favorites::table
        .inner_join(objects::table)
        .filter(favorites::user_id.eq(user_id))
        .filter(objects::deleted_at.is_null())
        .filter(objects::perm_deleted.eq(false))
        .order(favorites::id.asc())
        .select((Favorite::as_select(), Object::as_select()))
        .load(conn))?)
}
