//! The mail outbox as the SMTP sender sees it: claiming due messages with a lease and recording
//! each attempt. A message is claimed by setting `lease_node` and `lease_until` (PostgreSQL:
//! `FOR UPDATE SKIP LOCKED`, so nodes never take the same message; SQLite: the writer thread
//! serialises claims). An attempt's outcome is recorded only by the node that still holds the
//! lease, so a node whose lease ran out (and whose message another node took) changes nothing.
//!
//! The outbox keeps no live secret: a message that will not be sent again (`sent`, `error`,
//! `expired`) has its body erased in the statement that finishes it, and a queued message whose
//! link or code expired (`expires_at`) is marked `expired` instead of being sent. What an
//! operator reads stays: recipient, subject, state, attempts and times.

use crate::schema::mail_outbox;
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};

/// A message of the outbox.
#[derive(Debug, Clone, Queryable, Selectable, QueryableByName)]
#[diesel(table_name = mail_outbox)]
pub struct OutboxMail {
    pub id: String,
    pub user_id: Option<String>,
    pub to_address: String,
    pub subject: String,
    pub body: String,
    pub created_at: i64,
    /// `queued`, `sent`, `error` or `expired`.
    pub state: String,
    pub attempts: i32,
    /// Unix milliseconds.
    pub next_attempt_at: i64,
    pub lease_node: Option<String>,
    /// Unix milliseconds.
    pub lease_until: Option<i64>,
    pub last_error: Option<String>,
    pub sent_at: Option<i64>,
    pub message_id: Option<String>,
    /// When the link or code the message carries stops working (Unix seconds).
    pub expires_at: Option<i64>,
}

impl OutboxMail {
    /// The Message-ID header: the stored one, else (a message written before Coffer sent mail
    /// itself) one derived from the id, the same on every attempt.
    pub fn message_id_or(&self, domain: &str) -> String {
        self.message_id
            .clone()
            .unwrap_or_else(|| message_id(&self.id, domain))
    }
}

/// A message to write into the outbox.
#[derive(Debug, Clone, Copy)]
pub struct NewMessage<'a> {
    /// The email it tells an outside recipient of, if any (its state follows delivery).
    pub email_id: Option<&'a str>,
    pub user_id: Option<&'a str>,
    pub to: &'a str,
    pub subject: &'a str,
    pub body: &'a str,
    /// When the link or code in the body stops working (Unix seconds): a message not sent by
    /// then never is. `None` for a message that carries no such secret.
    pub expires_at: Option<i64>,
}

/// Writes a message into the outbox, queued and due at once, with its Message-ID fixed.
pub fn queue(
    conn: &mut DbConn,
    m: &NewMessage<'_>,
    message_domain: &str,
    now: i64,
) -> StoreResult<String> {
    let id = uuid::Uuid::new_v4().to_string();
    db_run!(conn => diesel::insert_into(mail_outbox::table)
        .values((
            mail_outbox::id.eq(&id),
            mail_outbox::user_id.eq(m.user_id),
            mail_outbox::to_address.eq(m.to),
            mail_outbox::subject.eq(m.subject),
            mail_outbox::body.eq(m.body),
            mail_outbox::created_at.eq(now),
            mail_outbox::state.eq("queued"),
            mail_outbox::next_attempt_at.eq(now.saturating_mul(1000)),
            mail_outbox::message_id.eq(message_id(&id, message_domain)),
            mail_outbox::email_id.eq(m.email_id),
            mail_outbox::expires_at.eq(m.expires_at),
        ))
        .execute(conn))?;
    crate::wake::announce(conn, crate::wake::Work::Mail)?;
    Ok(id)
}

/// When the earliest queued message no node holds falls due (Unix milliseconds), if any: the
/// pump sleeps until then at most.
pub fn next_due(conn: &mut DbConn, now_ms: i64) -> StoreResult<Option<i64>> {
    Ok(db_run!(conn => mail_outbox::table
        .filter(diesel::dsl::sql::<diesel::sql_types::Bool>("state = 'queued'"))
        .filter(
            mail_outbox::lease_until
                .is_null()
                .or(mail_outbox::lease_until.lt(now_ms)),
        )
        .select(diesel::dsl::min(mail_outbox::next_attempt_at))
        .first::<Option<i64>>(conn))?)
}

/// The Message-ID of the message `id`: `<id@domain>`.
pub fn message_id(id: &str, domain: &str) -> String {
    format!("<{id}@{domain}>")
}

/// Claims up to `limit` due messages for `node` until `now_ms + lease_ms`. A message whose lease
/// ran out (its node died mid-send) is due again; one whose link or code expired is never
/// claimed (see [`expire`]).
pub fn claim(
    conn: &mut DbConn,
    node: &str,
    now_ms: i64,
    lease_ms: i64,
    limit: i64,
) -> StoreResult<Vec<OutboxMail>> {
    let lock = match conn {
        DbConn::Pg(_) => " FOR UPDATE SKIP LOCKED",
        DbConn::Sqlite(_) => "",
    };
    // `state = 'queued'` written out: the partial index `mail_outbox_due` states it so. The
    // placeholders first appear in their binding order: SQLite numbers `$n` by first appearance.
    let sql = format!(
        "UPDATE mail_outbox SET lease_node = $1, lease_until = $2 \
         WHERE id IN (SELECT id FROM mail_outbox WHERE state = 'queued' AND next_attempt_at <= $3 \
         AND (lease_until IS NULL OR lease_until < $3) AND (expires_at IS NULL OR expires_at > $4) \
         ORDER BY next_attempt_at, id LIMIT $5{lock}) \
         RETURNING id, user_id, to_address, subject, body, created_at, state, attempts, \
         next_attempt_at, lease_node, lease_until, last_error, sent_at, message_id, expires_at"
    );
    Ok(db_run!(conn => diesel::sql_query(&sql)
        .bind::<Text, _>(node)
        .bind::<BigInt, _>(now_ms + lease_ms)
        .bind::<BigInt, _>(now_ms)
        .bind::<BigInt, _>(now_ms.div_euclid(1000))
        .bind::<BigInt, _>(limit)
        .load::<OutboxMail>(conn))?)
}

/// What an attempt came to.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub id: String,
    /// The attempt's number (1-based).
    pub attempt: i32,
    /// `sent`, `queued` (tried again at `next_attempt_at`), `error` (for good) or `expired` (its
    /// link or code expired before it could be sent).
    pub state: &'static str,
    pub next_attempt_at: i64,
    /// The reason of a failure.
    pub error: Option<String>,
    pub message_id: String,
    /// Unix seconds.
    pub now: i64,
}

/// Records an attempt of `node`'s; false when `node` no longer holds the message (its lease ran
/// out and another node took it), and nothing is changed. A final state erases the body.
pub fn record(conn: &mut DbConn, node: &str, a: &Attempt) -> StoreResult<bool> {
    let error: Option<String> = a.error.as_ref().map(|e| e.chars().take(1000).collect());
    let sent_at = (a.state == "sent").then_some(a.now);
    let done = db_run!(conn => diesel::update(mail_outbox::table
        .find(&a.id)
        .filter(mail_outbox::state.eq("queued"))
        .filter(mail_outbox::lease_node.eq(node)))
        .set((
            mail_outbox::state.eq(a.state),
            mail_outbox::attempts.eq(a.attempt),
            mail_outbox::next_attempt_at.eq(a.next_attempt_at),
            mail_outbox::lease_node.eq(None::<String>),
            mail_outbox::lease_until.eq(None::<i64>),
            mail_outbox::last_error.eq(error),
            mail_outbox::sent_at.eq(sent_at),
            mail_outbox::message_id.eq(&a.message_id),
        ))
        .execute(conn))?
        == 1;
    if done && a.state != "queued" {
        erase_body(conn, &a.id)?;
    }
    // A message to an outside recipient of an email: the email is sent once all of its
    // messages are, or in error once one failed for good.
    if done && a.state != "queued" {
        if let Some(email) = crate::emails::email_of_message(conn, &a.id)? {
            crate::emails::settle(conn, &email, a.now)?;
        }
    }
    Ok(done)
}

/// Empties the body of a message that will not be sent again: it held a link or a code.
fn erase_body(conn: &mut DbConn, id: &str) -> StoreResult<()> {
    db_run!(conn => diesel::update(mail_outbox::table.find(id))
        .set(mail_outbox::body.eq(""))
        .execute(conn))?;
    Ok(())
}

/// The reason an expired message keeps in `last_error`.
pub const EXPIRED: &str = "the link or code in the message expired before it was sent";

/// Marks every queued message whose link or code expired by `now` (Unix seconds) `expired` and
/// erases its body, unless a node is sending it right now (its outcome decides; a lease that
/// ran out is no longer sending). An email whose last open message this was is settled in the
/// same transaction. Returns how many messages expired.
pub fn expire(conn: &mut DbConn, now: i64) -> StoreResult<usize> {
    let now_ms = now.saturating_mul(1000);
    let due: Vec<(String, Option<String>)> = db_run!(conn => mail_outbox::table
        .filter(diesel::dsl::sql::<diesel::sql_types::Bool>("state = 'queued'"))
        .filter(mail_outbox::expires_at.le(now))
        .filter(
            mail_outbox::lease_until
                .is_null()
                .or(mail_outbox::lease_until.lt(now_ms)),
        )
        .select((mail_outbox::id, mail_outbox::email_id))
        .load(conn))?;
    if due.is_empty() {
        return Ok(0);
    }
    let ids: Vec<&str> = due.iter().map(|(id, _)| id.as_str()).collect();
    let n = db_run!(conn => diesel::update(mail_outbox::table
        .filter(mail_outbox::id.eq_any(&ids))
        .filter(mail_outbox::state.eq("queued")))
        .set((
            mail_outbox::state.eq("expired"),
            mail_outbox::body.eq(""),
            mail_outbox::lease_node.eq(None::<String>),
            mail_outbox::lease_until.eq(None::<i64>),
            mail_outbox::last_error.eq(EXPIRED),
        ))
        .execute(conn))?;
    let mut emails: Vec<&str> = due.iter().filter_map(|(_, e)| e.as_deref()).collect();
    emails.sort_unstable();
    emails.dedup();
    for email in emails {
        crate::emails::settle(conn, email, now)?;
    }
    Ok(n)
}

/// Ends the queued messages of the email `email_id` to `to` (a link that was withdrawn): marked
/// `expired` with `reason`, their bodies erased, unless a node is sending one right now (its
/// outcome decides). The email is settled when this was its last open message. Returns how many
/// messages ended.
pub fn cancel(
    conn: &mut DbConn,
    email_id: &str,
    to: &str,
    now: i64,
    reason: &str,
) -> StoreResult<usize> {
    let now_ms = now.saturating_mul(1000);
    let n = db_run!(conn => diesel::update(mail_outbox::table
        .filter(mail_outbox::email_id.eq(email_id))
        .filter(mail_outbox::to_address.eq(to))
        .filter(mail_outbox::state.eq("queued"))
        .filter(
            mail_outbox::lease_until
                .is_null()
                .or(mail_outbox::lease_until.lt(now_ms)),
        ))
        .set((
            mail_outbox::state.eq("expired"),
            mail_outbox::body.eq(""),
            mail_outbox::lease_node.eq(None::<String>),
            mail_outbox::lease_until.eq(None::<i64>),
            mail_outbox::last_error.eq(reason),
        ))
        .execute(conn))?;
    if n > 0 {
        crate::emails::settle(conn, email_id, now)?;
    }
    Ok(n)
}

/// Which messages [`list`] shows.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Only messages in this state, whatever their age.
    pub state: Option<String>,
    /// Without a state: the messages still `queued` or in `error`, and any written at or after
    /// this time (Unix seconds).
    pub recent_since: i64,
    pub limit: i64,
}

/// Messages for the operator, newest first.
pub fn list(conn: &mut DbConn, f: &ListFilter) -> StoreResult<Vec<OutboxMail>> {
    Ok(db_run!(conn => {
        let mut q = mail_outbox::table
            .select(OutboxMail::as_select())
            .order((mail_outbox::created_at.desc(), mail_outbox::id.desc()))
            .limit(f.limit)
            .into_boxed();
        q = match &f.state {
            Some(state) => q.filter(mail_outbox::state.eq(state.clone())),
            None => q.filter(
                mail_outbox::state
                    .eq_any(["queued", "error"])
                    .or(mail_outbox::created_at.ge(f.recent_since)),
            ),
        };
        q.load(conn)
    })?)
}

/// One message.
pub fn by_id(conn: &mut DbConn, id: &str) -> StoreResult<Option<OutboxMail>> {
    Ok(db_run!(conn => mail_outbox::table
        .find(id)
        .select(OutboxMail::as_select())
        .first(conn)
        .optional())?)
}

/// The messages to one address, oldest first (for operators and tests).
pub fn to_address(conn: &mut DbConn, to: &str) -> StoreResult<Vec<OutboxMail>> {
    Ok(db_run!(conn => mail_outbox::table
        .filter(mail_outbox::to_address.eq(to))
        .order((mail_outbox::created_at.asc(), mail_outbox::id.asc()))
        .select(OutboxMail::as_select())
        .load(conn))?)
}
