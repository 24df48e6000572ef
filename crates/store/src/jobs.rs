//! The job queue: one table shared by every node. A job is claimed by setting it `running` with
//! a lease (PostgreSQL: `FOR UPDATE SKIP LOCKED`, so nodes never take the same job; SQLite: the
//! writer thread serialises claims). A job whose lease ran out is claimed again, so a dead
//! node's work returns. Failures are retried with backoff, then kept as `failed` with their error.

use crate::models::Job;
use crate::schema::jobs;
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};

/// Queues a job to run at `run_at`.
pub fn enqueue(
    conn: &mut DbConn,
    kind: &str,
    payload: &str,
    run_at: i64,
    max_attempts: i64,
    t: i64,
) -> StoreResult<i64> {
    let id = db_run!(conn => diesel::insert_into(jobs::table)
        .values((
            jobs::kind.eq(kind),
            jobs::payload.eq(payload),
            jobs::state.eq("queued"),
            jobs::attempts.eq(0),
            jobs::max_attempts.eq(max_attempts),
            jobs::run_at.eq(run_at),
            jobs::created_at.eq(t),
            jobs::updated_at.eq(t),
        ))
        .returning(jobs::id)
        .get_result(conn))?;
    crate::wake::announce(conn, crate::wake::Work::Jobs)?;
    Ok(id)
}

/// When the earliest queued job falls due (Unix seconds), if any is queued: the worker sleeps
/// until then at most. Running jobs whose lease may run out are left to the worker's own look.
pub fn next_due(conn: &mut DbConn) -> StoreResult<Option<i64>> {
    Ok(db_run!(conn => jobs::table
        .filter(jobs::state.eq("queued"))
        .select(diesel::dsl::min(jobs::run_at))
        .first::<Option<i64>>(conn))?)
}

/// Whether a job of this kind with this payload is queued or running (to avoid duplicates of
/// periodic work).
pub fn pending(conn: &mut DbConn, kind: &str, payload: &str) -> StoreResult<bool> {
    Ok(
        db_run!(conn => diesel::select(diesel::dsl::exists(jobs::table
        .filter(jobs::kind.eq(kind))
        .filter(jobs::payload.eq(payload))
        .filter(jobs::state.eq_any(["queued", "running"]))))
        .get_result(conn))?,
    )
}

/// Claims up to `n` due jobs for `node` until `t + lease` seconds.
pub fn claim(conn: &mut DbConn, node: &str, n: i64, lease: i64, t: i64) -> StoreResult<Vec<Job>> {
    let lock = match conn {
        DbConn::Pg(_) => " FOR UPDATE SKIP LOCKED",
        DbConn::Sqlite(_) => "",
    };
    let sql = format!(
        "UPDATE jobs SET state = 'running', lease_until = $1, locked_by = $2, \
         attempts = attempts + 1, updated_at = $3 \
         WHERE id IN (SELECT id FROM jobs WHERE (state = 'queued' AND run_at <= $3) \
         OR (state = 'running' AND lease_until < $3) ORDER BY run_at, id LIMIT $4{lock}) \
         RETURNING id, kind, payload, state, attempts, max_attempts, run_at, lease_until, \
         locked_by, last_error, created_at, updated_at"
    );
    Ok(db_run!(conn => diesel::sql_query(&sql)
        .bind::<BigInt, _>(t + lease)
        .bind::<Text, _>(node)
        .bind::<BigInt, _>(t)
        .bind::<BigInt, _>(n)
        .load::<Job>(conn))?)
}

/// Removes a job its holder finished. False when the lease was lost (another node took it).
pub fn complete(conn: &mut DbConn, id: i64, node: &str) -> StoreResult<bool> {
    Ok(db_run!(conn => diesel::delete(jobs::table
        .find(id)
        .filter(jobs::state.eq("running"))
        .filter(jobs::locked_by.eq(node)))
        .execute(conn))?
        == 1)
}

/// Records a failed attempt: queued again after `backoff` seconds, or `failed` for good once
/// the attempts are spent (or when `permanent`).
pub fn fail(
    conn: &mut DbConn,
    job: &Job,
    node: &str,
    error: &str,
    backoff: i64,
    permanent: bool,
    t: i64,
) -> StoreResult<()> {
    let give_up = permanent || job.attempts >= job.max_attempts;
    let error: String = error.chars().take(1000).collect();
    db_run!(conn => diesel::update(jobs::table
        .find(job.id)
        .filter(jobs::state.eq("running"))
        .filter(jobs::locked_by.eq(node)))
        .set((
            jobs::state.eq(if give_up { "failed" } else { "queued" }),
            jobs::run_at.eq(t + backoff),
            jobs::lease_until.eq(None::<i64>),
            jobs::locked_by.eq(None::<String>),
            jobs::last_error.eq(error),
            jobs::updated_at.eq(t),
        ))
        .execute(conn))?;
    Ok(())
}

/// Failed jobs, newest first (for operators).
pub fn failed(conn: &mut DbConn, limit: i64) -> StoreResult<Vec<Job>> {
    Ok(db_run!(conn => jobs::table
        .filter(jobs::state.eq("failed"))
        .order_by(jobs::updated_at.desc())
        .limit(limit)
        .select(Job::as_select())
        .load(conn))?)
}

pub fn by_id(conn: &mut DbConn, id: i64) -> StoreResult<Option<Job>> {
    Ok(db_run!(conn => jobs::table.find(id).select(Job::as_select()).first(conn).optional())?)
}
