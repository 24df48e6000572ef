//! Users' SSH public keys (`ssh_keys`) and the SFTP server's host keys (`sftp_host_keys`).

use crate::models::{SshKey, User};
use crate::schema::{sftp_host_keys, ssh_keys, users};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

/// What a new key is.
pub struct NewKey<'a> {
    pub user_id: &'a str,
    pub name: &'a str,
    pub public_key: &'a str,
    pub fingerprint: &'a str,
}

/// Adds a live key; `None` when the name is taken among the user's live keys or the key is live
/// on an account already (the unique indexes decide, so two requests at once cannot both pass).
pub fn insert(conn: &mut DbConn, k: &NewKey<'_>, t: i64) -> StoreResult<Option<SshKey>> {
    let r = db_run!(conn => diesel::insert_into(ssh_keys::table)
        .values((
            ssh_keys::user_id.eq(k.user_id),
            ssh_keys::name.eq(k.name),
            ssh_keys::public_key.eq(k.public_key),
            ssh_keys::fingerprint.eq(k.fingerprint),
            ssh_keys::active.eq(true),
            ssh_keys::admin_active.eq(true),
            ssh_keys::deleted.eq(false),
            ssh_keys::created_at.eq(t),
        ))
        .returning(SshKey::as_returning())
        .get_result(conn));
    match r {
        Ok(k) => Ok(Some(k)),
        Err(diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::UniqueViolation,
            _,
        )) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

pub fn by_id(conn: &mut DbConn, id: i64) -> StoreResult<Option<SshKey>> {
    Ok(db_run!(conn => ssh_keys::table
        .find(id)
        .select(SshKey::as_select())
        .first(conn)
        .optional())?)
}

/// The user's live key of this name.
pub fn live_named(conn: &mut DbConn, user_id: &str, name: &str) -> StoreResult<Option<SshKey>> {
    Ok(db_run!(conn => ssh_keys::table
        .filter(ssh_keys::user_id.eq(user_id))
        .filter(ssh_keys::name.eq(name))
        .filter(ssh_keys::deleted.eq(false))
        .select(SshKey::as_select())
        .first(conn)
        .optional())?)
}

/// The live key with this fingerprint, on whichever account.
pub fn live_by_fingerprint(conn: &mut DbConn, fingerprint: &str) -> StoreResult<Option<SshKey>> {
    Ok(db_run!(conn => ssh_keys::table
        .filter(ssh_keys::fingerprint.eq(fingerprint))
        .filter(ssh_keys::deleted.eq(false))
        .select(SshKey::as_select())
        .first(conn)
        .optional())?)
}

/// The live, active key with this fingerprint and its account, when the account's email is
/// `email`: what an SFTP sign-in by key needs, in one read.
pub fn sign_in(
    conn: &mut DbConn,
    email: &str,
    fingerprint: &str,
) -> StoreResult<Option<(SshKey, User)>> {
    Ok(db_run!(conn => ssh_keys::table
        .inner_join(users::table)
        .filter(ssh_keys::fingerprint.eq(fingerprint))
        .filter(ssh_keys::deleted.eq(false))
        .filter(ssh_keys::active.eq(true))
        .filter(ssh_keys::admin_active.eq(true))
        .filter(users::email.eq(email))
        .select((SshKey::as_select(), User::as_select()))
        .first(conn)
        .optional())?)
}

/// A user's keys in the order they were made: the live ones, or with `deleted` every one.
pub fn of_user(
    conn: &mut DbConn,
    user_id: &str,
    deleted: bool,
    offset: i64,
    limit: i64,
) -> StoreResult<(Vec<SshKey>, i64)> {
    let (items, total) = db_run!(conn => {
        let mut q = ssh_keys::table.filter(ssh_keys::user_id.eq(user_id)).into_boxed();
        let mut n = ssh_keys::table.filter(ssh_keys::user_id.eq(user_id)).into_boxed();
        if !deleted {
            q = q.filter(ssh_keys::deleted.eq(false));
            n = n.filter(ssh_keys::deleted.eq(false));
        }
        let items = q
            .order(ssh_keys::id.asc())
            .offset(offset)
            .limit(limit)
            .select(SshKey::as_select())
            .load(conn)?;
        let total: i64 = n.count().get_result(conn)?;
        Ok::<_, diesel::result::Error>((items, total))
    })?;
    Ok((items, total))
}

/// Marks a key deleted; false when it was already.
pub fn delete(conn: &mut DbConn, id: i64, t: i64) -> StoreResult<bool> {
    let n = db_run!(conn => diesel::update(
        ssh_keys::table.find(id).filter(ssh_keys::deleted.eq(false)),
    )
    .set((ssh_keys::deleted.eq(true), ssh_keys::deleted_at.eq(Some(t))))
    .execute(conn))?;
    Ok(n == 1)
}

/// The stored host key of an algorithm (OpenSSH private-key text).
pub fn host_key(conn: &mut DbConn, algorithm: &str) -> StoreResult<Option<String>> {
    Ok(db_run!(conn => sftp_host_keys::table
        .find(algorithm)
        .select(sftp_host_keys::private_key)
        .first(conn)
        .optional())?)
}

/// Stores a host key unless one of the algorithm is stored already (another node was first);
/// the caller reads back the one that stays.
pub fn put_host_key_once(
    conn: &mut DbConn,
    algorithm: &str,
    private_key: &str,
    t: i64,
) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(sftp_host_keys::table)
        .values((
            sftp_host_keys::algorithm.eq(algorithm),
            sftp_host_keys::private_key.eq(private_key),
            sftp_host_keys::created_at.eq(t),
        ))
        .on_conflict(sftp_host_keys::algorithm)
        .do_nothing()
        .execute(conn))?;
    Ok(())
}
