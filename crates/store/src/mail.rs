//! The mail outbox as the SMTP sender sees it: claiming due messages with a lease and recording
//! each attempt. A message is claimed by setting `lease_node` and `lease_until` (PostgreSQL:
//! `FOR UPDATE SKIP LOCKED`, so nodes never take the same message; SQLite: the writer thread
//! serialises claims). An attempt's outcome is recorded only by the node that still holds the
//! lease, so a node whose lease ran out (and whose message another node took) changes nothing.

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
    /// `queued`, `sent` or `error`.
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
/// ran out (its node died mid-send) is due again.
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
    // `state = 'queued'` written out: the partial index `mail_outbox_due` states it so.
    let sql = format!(
        "UPDATE mail_outbox SET lease_node = $1, lease_until = $2 \
         WHERE id IN (SELECT id FROM mail_outbox WHERE state = 'queued' AND next_attempt_at <= $3 \
         AND (lease_until IS NULL OR lease_until < $3) ORDER BY next_attempt_at, id LIMIT $4{lock}) \
         RETURNING id, user_id, to_address, subject, body, created_at, state, attempts, \
         next_attempt_at, lease_node, lease_until, last_error, sent_at, message_id"
    );
    Ok(db_run!(conn => diesel::sql_query(&sql)
        .bind::<Text, _>(node)
        .bind::<BigInt, _>(now_ms + lease_ms)
        .bind::<BigInt, _>(now_ms)
        .bind::<BigInt, _>(limit)
        .load::<OutboxMail>(conn))?)
}

/// What an attempt came to.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub id: String,
    /// The attempt's number (1-based).
    pub attempt: i32,
    /// `sent`, `queued` (tried again at `next_attempt_at`) or `error` (for good).
    pub state: &'static str,
    pub next_attempt_at: i64,
    /// The reason of a failure.
    pub error: Option<String>,
    pub message_id: String,
    /// Unix seconds.
    pub now: i64,
}

/// Records an attempt of `node`'s; false when `node` no longer holds the message (its lease ran
/// out and another node took it), and nothing is changed.
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
    // A message to an outside recipient of an email: the email is sent once all of its
    // messages are, or in error once one failed for good.
    if done && a.state != "queued" {
        if let Some(email) = crate::emails::email_of_message(conn, &a.id)? {
            crate::emails::settle(conn, &email, a.now)?;
        }
    }
    Ok(done)
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
