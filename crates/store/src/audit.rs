//! The activity log: appending records behind the chain head, reading them back in sequence for
//! verification and exports, the DLI activity queries, signed checkpoints and retention.
//!
//! The chain head is the last record by key: the appending transaction reads it and appends
//! the next number. Appends are serialized (on SQLite by the one writer; on PostgreSQL by a
//! transaction-scoped advisory lock taken before the read, so a second node's append waits for
//! this commit), so sequence numbers are gapless and no two records share a predecessor.
//! `audit_chain` (one row) says only where the kept chain starts: no append writes it, which
//! saves a page written per commit.

use crate::schema::{activities, activity_users, audit_chain, audit_checkpoints};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

/// One record of the activity log as stored.
///
/// An absent field is inserted as NULL, not left to the column's default: with defaults diesel
/// writes the insert's SQL anew for each combination of absent fields, and on PostgreSQL (whose
/// `DEFAULT` keyword it will not keep prepared) prepares it on every append. As NULLs the insert
/// is one statement the connection prepares once.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = activities, treat_none_as_default_value = false)]
pub struct Activity {
    pub seq: i64,
    pub created_at: i64,
    pub event: String,
    pub kind: String,
    pub actor_id: Option<String>,
    pub object_id: Option<String>,
    pub object_kind: Option<String>,
    pub object_name: Option<String>,
    pub parent_id: Option<String>,
    pub message: String,
    pub successful: bool,
    pub transaction_id: Option<String>,
    /// JSON array of the user ids the record concerns besides the actor.
    pub users: String,
    /// The event's data (JSON object).
    pub data: String,
    pub prev_hash: String,
    pub hash: String,
}

/// Where the kept chain starts: its first sequence number and the hash before it (64 zeros, or
/// the hash of the checkpoint retention removed the older records through).
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = audit_chain)]
pub struct Chain {
    pub first_seq: i64,
    pub first_prev: String,
}

/// The chain head: the last sequence number and its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub seq: i64,
    pub hash: String,
}

/// The advisory lock that serializes appends on PostgreSQL (beside the migration locks).
const PG_APPEND_LOCK_KEY: i64 = 0x0C0F_FE14;

/// A signed checkpoint.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = audit_checkpoints)]
pub struct Checkpoint {
    pub seq: i64,
    pub hash: String,
    pub created_at: i64,
    pub public_key: String,
    pub signature: String,
}

/// The chain head for an append: on PostgreSQL the append lock is taken first and held to the
/// end of the transaction, so the read sees every append committed before and no other append
/// reads the same head until this transaction ends (the read is a statement of its own after
/// the lock, which in read committed takes a fresh snapshot). On SQLite the one writer already
/// excludes every other append.
pub fn head_for_append(conn: &mut DbConn) -> StoreResult<Head> {
    if matches!(conn, DbConn::Pg(_)) {
        crate::batch_execute(
            conn,
            &format!("SELECT pg_advisory_xact_lock({PG_APPEND_LOCK_KEY})"),
        )?;
    }
    head(conn)
}

/// The chain head, unlocked: the last record, or before the first the hash the kept chain
/// starts from.
pub fn head(conn: &mut DbConn) -> StoreResult<Head> {
    let last: Option<(i64, String)> = db_run!(conn => activities::table
        .order(activities::seq.desc())
        .select((activities::seq, activities::hash))
        .first(conn)
        .optional())?;
    Ok(match last {
        Some((seq, hash)) => Head { seq, hash },
        None => {
            let c = chain(conn)?;
            Head {
                seq: c.first_seq - 1,
                hash: c.first_prev,
            }
        }
    })
}

/// Where the kept chain starts.
pub fn chain(conn: &mut DbConn) -> StoreResult<Chain> {
    Ok(db_run!(conn => audit_chain::table
        .filter(audit_chain::id.eq(1))
        .select(Chain::as_select())
        .first(conn))?)
}

/// Appends `rec` (whose `seq` and `hash` follow the head read by [`head_for_append`] in this
/// transaction) with the users it concerns (`(user id, direct)`); the record is the new head.
pub fn append(conn: &mut DbConn, rec: &Activity, users: &[(String, bool)]) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(activities::table).values(rec).execute(conn))?;
    // One row per statement: a single-row insert is a prepared statement the connection keeps,
    // where a multi-row insert of a varying count would be prepared anew on every append.
    // A row already at this number can only be left by a record removed by hand from the tail
    // (the head is the last record, so its number is taken again): the new record's row takes
    // its place, so the append goes on and `audit verify` reports the removal against the last
    // checkpoint, instead of every later change of that user failing on the key. That is an
    // insert that does nothing on the key, then an update only when it did nothing: diesel
    // keeps no `ON CONFLICT DO UPDATE` statement prepared, so an upsert was compiled again on
    // every append, where the insert is prepared once.
    for (u, direct) in users {
        let inserted = db_run!(conn => diesel::insert_into(activity_users::table)
            .values((
                activity_users::user_id.eq(u.as_str()),
                activity_users::seq.eq(rec.seq),
                activity_users::direct.eq(*direct),
                activity_users::created_at.eq(rec.created_at),
            ))
            .on_conflict((activity_users::user_id, activity_users::seq))
            .do_nothing()
            .execute(conn))?;
        if inserted == 0 {
            db_run!(conn => diesel::update(activity_users::table
                    .filter(activity_users::user_id.eq(u.as_str()))
                    .filter(activity_users::seq.eq(rec.seq)))
                .set((
                    activity_users::direct.eq(*direct),
                    activity_users::created_at.eq(rec.created_at),
                ))
                .execute(conn))?;
        }
    }
    Ok(())
}

/// Records with `seq > after`, in sequence order, at most `limit`.
pub fn after(conn: &mut DbConn, after: i64, limit: i64) -> StoreResult<Vec<Activity>> {
    Ok(db_run!(conn => activities::table
        .filter(activities::seq.gt(after))
        .order(activities::seq.asc())
        .limit(limit)
        .select(Activity::as_select())
        .load(conn))?)
}

/// What a DLI activity read asks for.
#[derive(Debug, Clone, Default)]
pub struct ActivityQuery {
    /// Records concerning this user (as actor, or named by the event).
    pub user_id: String,
    /// Only those where the user is the actor (`filter=my`).
    pub actor_only: bool,
    /// Only records about this file, or (`in_parent`) about this folder and what it holds.
    pub object_id: Option<String>,
    pub in_parent: bool,
    pub since: Option<i64>,
    pub until: Option<i64>,
    pub kinds: Option<Vec<String>>,
    /// A lowercase text the message contains.
    pub search: Option<String>,
    pub transaction_id: Option<String>,
    pub by_name: bool,
    pub descending: bool,
    pub offset: i64,
    pub limit: i64,
}

/// The records `q` selects, as a boxed query (one definition for the page and its count).
macro_rules! selected {
    ($q:expr) => {{
        let q = $q;
        let mut s = activities::table
            .inner_join(activity_users::table.on(activity_users::seq.eq(activities::seq)))
            .filter(activity_users::user_id.eq(q.user_id.clone()))
            .into_boxed();
        if q.actor_only {
            s = s.filter(activity_users::direct.eq(true));
        }
        if let Some(o) = &q.object_id {
            if q.in_parent {
                s = s.filter(
                    activities::object_id
                        .eq(o.clone())
                        .or(activities::parent_id.eq(o.clone())),
                );
            } else {
                // Only a record about a file carries a file's id as its object, and the index
                // by object holds only those (SQLite): the condition is the index's own, written
                // out as it is there so that SQLite sees the index serves the read.
                s = s
                    .filter(activities::object_id.eq(o.clone()))
                    .filter(diesel::dsl::sql::<diesel::sql_types::Bool>(
                        "activities.object_kind = 'file'",
                    ));
            }
        }
        if let Some(t) = q.since {
            s = s.filter(activity_users::created_at.ge(t));
        }
        if let Some(t) = q.until {
            s = s.filter(activity_users::created_at.lt(t));
        }
        if let Some(k) = &q.kinds {
            s = s.filter(activities::kind.eq_any(k.clone()));
        }
        if let Some(t) = &q.search {
            s = s.filter(
                crate::filter::lower(activities::message)
                    .like(format!("%{}%", crate::like_escape(t)))
                    .escape('\\'),
            );
        }
        if let Some(t) = &q.transaction_id {
            s = s.filter(activities::transaction_id.eq(t.clone()));
        }
        s
    }};
}

/// One page of the records `q` selects and how many there are in all.
pub fn query(conn: &mut DbConn, q: &ActivityQuery) -> StoreResult<(Vec<Activity>, i64)> {
    let total: i64 = db_run!(conn => selected!(q).count().get_result(conn))?;
    let page = db_run!(conn => {
        let mut s = selected!(q);
        s = match (q.by_name, q.descending) {
            (true, false) => s.order((activities::object_name.asc(), activities::seq.asc())),
            (true, true) => s.order((activities::object_name.desc(), activities::seq.desc())),
            // A user's records by the user's own key (`activity_users.seq` is the record's):
            // the rows come in that order, where ordering by `activities.seq` made the database
            // sort all of the user's records for every page. An object's records stay ordered
            // by `activities.seq`, which lets SQLite start from the object's index.
            (false, false) if q.object_id.is_none() => s.order(activity_users::seq.asc()),
            (false, true) if q.object_id.is_none() => s.order(activity_users::seq.desc()),
            (false, false) => s.order(activities::seq.asc()),
            (false, true) => s.order(activities::seq.desc()),
        };
        s.offset(q.offset)
            .limit(q.limit)
            .select(Activity::as_select())
            .load(conn)
    })?;
    Ok((page, total))
}

/// The records concerning `user_id` created in `[since, until)` with `seq > after`, in sequence
/// order, at most `limit` (an export reads the range in such chunks).
pub fn of_user_after(
    conn: &mut DbConn,
    user_id: &str,
    since: i64,
    until: i64,
    after: i64,
    limit: i64,
) -> StoreResult<Vec<Activity>> {
    Ok(db_run!(conn => activities::table
        .inner_join(activity_users::table.on(activity_users::seq.eq(activities::seq)))
        .filter(activity_users::user_id.eq(user_id))
        .filter(activity_users::created_at.ge(since))
        .filter(activity_users::created_at.lt(until))
        // Bounded and ordered by the user's own index (`(user_id, seq)`): bounded and ordered
        // by the joined `activities.seq`, the database gathered and sorted every remaining
        // record for each page, which made an export of many pages quadratic.
        .filter(activity_users::seq.gt(after))
        .order(activity_users::seq.asc())
        .limit(limit)
        .select(Activity::as_select())
        .load(conn))?)
}

/// Stores a checkpoint.
pub fn insert_checkpoint(conn: &mut DbConn, c: &Checkpoint) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(audit_checkpoints::table).values(c).execute(conn))?;
    Ok(())
}

/// Every checkpoint, oldest first.
pub fn checkpoints(conn: &mut DbConn) -> StoreResult<Vec<Checkpoint>> {
    Ok(db_run!(conn => audit_checkpoints::table
        .order(audit_checkpoints::seq.asc())
        .select(Checkpoint::as_select())
        .load(conn))?)
}

/// The newest checkpoint at or before `seq` whose record was created before `before`.
pub fn last_checkpoint_before(conn: &mut DbConn, before: i64) -> StoreResult<Option<Checkpoint>> {
    Ok(db_run!(conn => audit_checkpoints::table
        .inner_join(activities::table.on(activities::seq.eq(audit_checkpoints::seq)))
        .filter(activities::created_at.lt(before))
        .order(audit_checkpoints::seq.desc())
        .select(Checkpoint::as_select())
        .first(conn)
        .optional())?)
}

/// Records read per query when retention gathers the users of the records it removes.
const EXPIRE_CHUNK: i64 = 10_000;

/// Removes every record up to and including the checkpoint's, and the older checkpoints: the
/// kept chain then starts after it, linked to its hash. Returns the records removed.
pub fn expire_through(conn: &mut DbConn, c: &Checkpoint) -> StoreResult<usize> {
    // The users the removed records concern (the actor and the `users` a record names, as
    // `append` inserted them), each user's rows then deleted by the key `(user_id, seq)`:
    // `activity_users` has no index by `seq` alone, which every append would have paid for.
    let mut concerned = std::collections::BTreeSet::new();
    let mut after = i64::MIN;
    loop {
        let rows: Vec<(i64, Option<String>, String)> = db_run!(conn => activities::table
            .filter(activities::seq.gt(after))
            .filter(activities::seq.le(c.seq))
            .order(activities::seq.asc())
            .limit(EXPIRE_CHUNK)
            .select((activities::seq, activities::actor_id, activities::users))
            .load(conn))?;
        let Some((last, _, _)) = rows.last() else {
            break;
        };
        after = *last;
        for (_, actor, users) in rows {
            concerned.extend(actor);
            // A `users` text that is not a list of ids (edited by hand) names nobody here; its
            // record fails verification anyway.
            concerned.extend(serde_json::from_str::<Vec<String>>(&users).unwrap_or_default());
        }
    }
    for u in &concerned {
        db_run!(conn => diesel::delete(activity_users::table
            .filter(activity_users::user_id.eq(u))
            .filter(activity_users::seq.le(c.seq)))
            .execute(conn))?;
    }
    let n = db_run!(conn => diesel::delete(activities::table.filter(activities::seq.le(c.seq)))
        .execute(conn))?;
    db_run!(conn => diesel::delete(audit_checkpoints::table.filter(audit_checkpoints::seq.lt(c.seq)))
        .execute(conn))?;
    db_run!(conn => diesel::update(audit_chain::table.filter(audit_chain::id.eq(1)))
        .set((audit_chain::first_seq.eq(c.seq + 1), audit_chain::first_prev.eq(&c.hash)))
        .execute(conn))?;
    Ok(n)
}

/// The name a message gives an object that its event does not name: a file's or folder's name
/// (also in the trash), a user's address, an email's subject.
pub fn name_of(conn: &mut DbConn, kind: &str, id: &str) -> StoreResult<Option<String>> {
    use crate::schema::{emails, objects, users};
    Ok(match kind {
        "file" | "folder" => db_run!(conn => objects::table
            .filter(objects::id.eq(id))
            .select(objects::name)
            .first::<String>(conn)
            .optional())?,
        "user" => db_run!(conn => users::table
            .filter(users::id.eq(id))
            .select(users::email)
            .first::<String>(conn)
            .optional())?,
        "mail" => db_run!(conn => emails::table
            .filter(emails::id.eq(id))
            .select(emails::subject)
            .first::<String>(conn)
            .optional())?,
        _ => None,
    })
}
