//! User accounts and their profiles.

use crate::models::{Profile, User};
use crate::schema::{profiles, roles, users};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

pub fn insert(conn: &mut DbConn, user: &User) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(users::table).values(user).execute(conn))?;
    Ok(())
}

pub fn by_id(conn: &mut DbConn, id: &str) -> StoreResult<Option<User>> {
    Ok(db_run!(conn => users::table.find(id).select(User::as_select()).first(conn).optional())?)
}

pub fn by_email(conn: &mut DbConn, email: &str) -> StoreResult<Option<User>> {
    Ok(db_run!(conn => users::table
        .filter(users::email.eq(email))
        .select(User::as_select())
        .first(conn)
        .optional())?)
}

pub fn count(conn: &mut DbConn) -> StoreResult<i64> {
    Ok(db_run!(conn => users::table.count().get_result(conn))?)
}

pub fn profile(conn: &mut DbConn, id: i64) -> StoreResult<Option<Profile>> {
    Ok(
        db_run!(conn => profiles::table.find(id).select(Profile::as_select()).first(conn).optional())?,
    )
}

pub fn profile_by_name(conn: &mut DbConn, name: &str) -> StoreResult<Option<Profile>> {
    Ok(db_run!(conn => profiles::table
        .filter(profiles::name.eq(name))
        .select(Profile::as_select())
        .first(conn)
        .optional())?)
}

/// Whether the system role allows SFTP.
pub fn role_sftp_enabled(conn: &mut DbConn, role: &str) -> StoreResult<bool> {
    Ok(db_run!(conn => roles::table.find(role).select(roles::sftp_enabled).first::<bool>(conn).optional())?
        .unwrap_or(false))
}

pub fn set_password(conn: &mut DbConn, id: &str, hash: &str, now: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table.find(id))
        .set((users::password_hash.eq(hash), users::updated_at.eq(now), users::version.eq(users::version + 1)))
        .execute(conn))?)
}

pub fn set_name(conn: &mut DbConn, id: &str, name: &str, now: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table.find(id))
        .set((users::name.eq(name), users::updated_at.eq(now), users::version.eq(users::version + 1)))
        .execute(conn))?)
}

/// Marks an account deleted: it can no longer sign in, and its tokens stop working.
pub fn mark_deleted(conn: &mut DbConn, id: &str, now: i64) -> StoreResult<usize> {
    Ok(
        db_run!(conn => diesel::update(users::table.find(id).filter(users::deleted.eq(false)))
        .set((users::deleted.eq(true), users::active.eq(false), users::updated_at.eq(now), users::version.eq(users::version + 1)))
        .execute(conn))?,
    )
}

pub fn set_mobile_number(
    conn: &mut DbConn,
    id: &str,
    number: &str,
    now: i64,
) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table.find(id))
        .set((users::mobile_number.eq(number), users::mobile_verified.eq(false), users::updated_at.eq(now)))
        .execute(conn))?)
}

/// Active users whose email or name contains `needle` (case-insensitive), by email.
pub fn search(conn: &mut DbConn, needle: &str, limit: i64) -> StoreResult<Vec<User>> {
    let pattern = format!("%{}%", crate::like_escape(&needle.to_lowercase()));
    Ok(db_run!(conn => users::table
        .filter(users::deleted.eq(false))
        .filter(users::active.eq(true))
        .filter(
            crate::filter::lower(users::email).like(&pattern).escape('\\')
                .or(crate::filter::lower(users::name).like(&pattern).escape('\\')),
        )
        .order(users::email.asc())
        .limit(limit)
        .select(User::as_select())
        .load(conn))?)
}

/// Records a text message (the recording SMS sender).
pub fn record_sms(
    conn: &mut DbConn,
    user_id: Option<&str>,
    to: &str,
    body: &str,
    now: i64,
) -> StoreResult<()> {
    use crate::schema::sms_messages;
    db_run!(conn => diesel::insert_into(sms_messages::table)
        .values((
            sms_messages::id.eq(uuid::Uuid::new_v4().to_string()),
            sms_messages::user_id.eq(user_id),
            sms_messages::to_number.eq(to),
            sms_messages::body.eq(body),
            sms_messages::created_at.eq(now),
        ))
        .execute(conn))?;
    Ok(())
}

pub fn clear_force_password_change(conn: &mut DbConn, id: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table.find(id))
        .set(users::force_password_change.eq(false))
        .execute(conn))?)
}
