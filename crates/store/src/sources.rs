//! External sources (`sources`), their pins (`source_pins`), Coffer's locks on remote files
//! (`source_locks`) and the transfers between a source and Coffer (`source_transfers`).

use crate::schema::{source_locks, source_pins, source_transfers, sources};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

/// A source a user connected. `credentials` is the sealed blob (nonce and ciphertext); this
/// crate never sees the key.
#[derive(Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = sources)]
pub struct Source {
    pub id: String,
    pub owner_id: String,
    pub name: String,
    pub name_folded: String,
    pub description: String,
    pub url: String,
    pub type_id: i64,
    pub credentials: Option<Vec<u8>>,
    pub needs_auth: bool,
    pub created_at: i64,
}

impl std::fmt::Debug for Source {
    // The sealed credentials stay out of every log line, even encrypted.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("id", &self.id)
            .field("owner_id", &self.owner_id)
            .field("name", &self.name)
            .field("type_id", &self.type_id)
            .field("needs_auth", &self.needs_auth)
            .finish_non_exhaustive()
    }
}

/// Coffer's lock on one remote file.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = source_locks)]
pub struct SourceLock {
    pub id: i64,
    pub source_id: String,
    pub path: String,
    pub user_id: String,
    pub remote_token: Option<String>,
    pub created_at: i64,
}

/// One transfer between a source and Coffer.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = source_transfers)]
pub struct Transfer {
    pub id: String,
    pub user_id: String,
    pub source_id: String,
    pub path: String,
    pub direction: String,
    pub state: i64,
    pub err_code: Option<i64>,
    pub object_id: Option<String>,
    pub folder_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

pub fn insert(conn: &mut DbConn, s: &Source) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(sources::table).values(s).execute(conn))?;
    Ok(())
}

pub fn by_id(conn: &mut DbConn, id: &str) -> StoreResult<Option<Source>> {
    Ok(db_run!(conn => sources::table
        .find(id)
        .select(Source::as_select())
        .first(conn)
        .optional())?)
}

/// The user's sources, oldest first.
pub fn of_owner(conn: &mut DbConn, owner_id: &str) -> StoreResult<Vec<Source>> {
    Ok(db_run!(conn => sources::table
        .filter(sources::owner_id.eq(owner_id))
        .order((sources::created_at.asc(), sources::id.asc()))
        .select(Source::as_select())
        .load(conn))?)
}

/// Whether the user has another source with this (folded) name or this address.
pub fn clash(
    conn: &mut DbConn,
    owner_id: &str,
    name_folded: &str,
    url: &str,
) -> StoreResult<Option<Source>> {
    Ok(db_run!(conn => sources::table
        .filter(sources::owner_id.eq(owner_id))
        .filter(sources::name_folded.eq(name_folded).or(sources::url.eq(url)))
        .select(Source::as_select())
        .first(conn)
        .optional())?)
}

/// Stores new sealed credentials and clears `needs_auth`.
pub fn set_credentials(conn: &mut DbConn, id: &str, sealed: Option<&[u8]>) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(sources::table.find(id))
        .set((sources::credentials.eq(sealed), sources::needs_auth.eq(false)))
        .execute(conn))?)
}

/// Replaces the sealed credentials only (key rotation): `needs_auth` stays as it is.
pub fn reseal(conn: &mut DbConn, id: &str, sealed: &[u8]) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(sources::table.find(id))
        .set(sources::credentials.eq(sealed))
        .execute(conn))?)
}

/// Every source with stored credentials (key rotation).
pub fn with_credentials(conn: &mut DbConn) -> StoreResult<Vec<Source>> {
    Ok(db_run!(conn => sources::table
        .filter(sources::credentials.is_not_null())
        .order(sources::id.asc())
        .select(Source::as_select())
        .load(conn))?)
}

pub fn set_needs_auth(conn: &mut DbConn, id: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(sources::table.find(id))
        .set(sources::needs_auth.eq(true))
        .execute(conn))?)
}

/// Deletes a source with its pins and locks (they name it without a foreign key).
pub fn delete(conn: &mut DbConn, id: &str) -> StoreResult<usize> {
    db_run!(conn => diesel::delete(source_pins::table.filter(source_pins::source_id.eq(id))).execute(conn))?;
    db_run!(conn => diesel::delete(source_locks::table.filter(source_locks::source_id.eq(id))).execute(conn))?;
    Ok(db_run!(conn => diesel::delete(sources::table.find(id)).execute(conn))?)
}

/// The user's pins: source id and the time pinned.
pub fn pins_of(conn: &mut DbConn, user_id: &str) -> StoreResult<Vec<(String, i64)>> {
    Ok(db_run!(conn => source_pins::table
        .filter(source_pins::user_id.eq(user_id))
        .select((source_pins::source_id, source_pins::pinned_at))
        .load(conn))?)
}

/// Pins a source; a pin already there keeps its time.
pub fn pin(conn: &mut DbConn, user_id: &str, source_id: &str, t: i64) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(source_pins::table)
        .values((
            source_pins::user_id.eq(user_id),
            source_pins::source_id.eq(source_id),
            source_pins::pinned_at.eq(t),
        ))
        .on_conflict((source_pins::user_id, source_pins::source_id))
        .do_nothing()
        .execute(conn))?;
    Ok(())
}

pub fn unpin(conn: &mut DbConn, user_id: &str, source_id: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(source_pins::table
        .filter(source_pins::user_id.eq(user_id))
        .filter(source_pins::source_id.eq(source_id)))
        .execute(conn))?)
}

pub fn lock_of(conn: &mut DbConn, source_id: &str, path: &str) -> StoreResult<Option<SourceLock>> {
    Ok(db_run!(conn => source_locks::table
        .filter(source_locks::source_id.eq(source_id))
        .filter(source_locks::path.eq(path))
        .select(SourceLock::as_select())
        .first(conn)
        .optional())?)
}

/// The locks of a source among `paths`.
pub fn locks_among(
    conn: &mut DbConn,
    source_id: &str,
    paths: &[String],
) -> StoreResult<Vec<SourceLock>> {
    Ok(db_run!(conn => source_locks::table
        .filter(source_locks::source_id.eq(source_id))
        .filter(crate::among::among(source_locks::path, paths))
        .select(SourceLock::as_select())
        .load(conn))?)
}

/// The locks on paths under the folder `dir` (`""`: the source's root), at any depth, and perhaps
/// a few more (the pattern matches ASCII letters of either case on SQLite): for a page of a
/// listing, whose caller keeps the paths it shows. One statement whose text does not change with
/// the page, so that the connection keeps it prepared.
pub fn locks_in(conn: &mut DbConn, source_id: &str, dir: &str) -> StoreResult<Vec<SourceLock>> {
    if dir.is_empty() {
        return Ok(db_run!(conn => source_locks::table
            .filter(source_locks::source_id.eq(source_id))
            .select(SourceLock::as_select())
            .load(conn))?);
    }
    let like = format!("{}/%", crate::like_escape(dir));
    Ok(db_run!(conn => source_locks::table
        .filter(source_locks::source_id.eq(source_id))
        .filter(source_locks::path.like(&like).escape('\\'))
        .select(SourceLock::as_select())
        .load(conn))?)
}

/// Records a lock; `false` when the file is locked already (by anyone).
pub fn insert_lock(
    conn: &mut DbConn,
    source_id: &str,
    path: &str,
    user_id: &str,
    remote_token: Option<&str>,
    t: i64,
) -> StoreResult<bool> {
    let n = db_run!(conn => diesel::insert_into(source_locks::table)
        .values((
            source_locks::source_id.eq(source_id),
            source_locks::path.eq(path),
            source_locks::user_id.eq(user_id),
            source_locks::remote_token.eq(remote_token),
            source_locks::created_at.eq(t),
        ))
        .on_conflict((source_locks::source_id, source_locks::path))
        .do_nothing()
        .execute(conn))?;
    Ok(n == 1)
}

pub fn delete_lock(conn: &mut DbConn, id: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(source_locks::table.find(id)).execute(conn))?)
}

/// How many locks of a source lie under `prefix` (a folder's path with its trailing `/`).
pub fn locks_under(conn: &mut DbConn, source_id: &str, prefix: &str) -> StoreResult<i64> {
    let like = format!("{}%", crate::like_escape(prefix));
    Ok(db_run!(conn => source_locks::table
        .filter(source_locks::source_id.eq(source_id))
        .filter(source_locks::path.like(&like).escape('\\'))
        .count()
        .get_result(conn))?)
}

/// Drops the locks on `path` and everything under it (after a remote delete).
pub fn delete_locks_under(conn: &mut DbConn, source_id: &str, path: &str) -> StoreResult<usize> {
    let prefix = format!("{}/%", crate::like_escape(path));
    Ok(db_run!(conn => diesel::delete(source_locks::table
        .filter(source_locks::source_id.eq(source_id))
        .filter(source_locks::path.eq(path).or(source_locks::path.like(&prefix).escape('\\'))))
        .execute(conn))?)
}

pub fn insert_transfer(conn: &mut DbConn, t: &Transfer) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(source_transfers::table).values(t).execute(conn))?;
    Ok(())
}

pub fn transfer(conn: &mut DbConn, id: &str) -> StoreResult<Option<Transfer>> {
    Ok(db_run!(conn => source_transfers::table
        .find(id)
        .select(Transfer::as_select())
        .first(conn)
        .optional())?)
}

/// The user's transfers among `ids`.
pub fn transfers_among(
    conn: &mut DbConn,
    user_id: &str,
    ids: &[String],
) -> StoreResult<Vec<Transfer>> {
    Ok(db_run!(conn => source_transfers::table
        .filter(source_transfers::user_id.eq(user_id))
        .filter(crate::among::among(source_transfers::id, ids))
        .order(source_transfers::created_at.asc())
        .select(Transfer::as_select())
        .load(conn))?)
}

/// Moves a transfer to `state` (with its error code and the Coffer object it made).
pub fn set_transfer_state(
    conn: &mut DbConn,
    id: &str,
    state: i64,
    err_code: Option<i64>,
    object_id: Option<&str>,
    t: i64,
) -> StoreResult<usize> {
    Ok(
        db_run!(conn => diesel::update(source_transfers::table.find(id))
        .set((
            source_transfers::state.eq(state),
            source_transfers::err_code.eq(err_code),
            source_transfers::object_id.eq(object_id),
            source_transfers::updated_at.eq(t),
        ))
        .execute(conn))?,
    )
}

/// The latest completed transfer into Coffer that made the object `object_id` (a file a check-in
/// returns to its source).
pub fn transfer_into(conn: &mut DbConn, object_id: &str) -> StoreResult<Option<Transfer>> {
    Ok(db_run!(conn => source_transfers::table
        .filter(source_transfers::object_id.eq(object_id))
        .filter(source_transfers::direction.eq("in"))
        .filter(source_transfers::state.eq(2))
        .order((source_transfers::updated_at.desc(), source_transfers::id.desc()))
        .select(Transfer::as_select())
        .first(conn)
        .optional())?)
}
