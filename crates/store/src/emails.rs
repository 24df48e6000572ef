//! Secure mail: emails, their recipients and attachments, and the mailbox entries through which
//! users see them (docs/mail.md). Plain queries; the rules live in `coffer_service::mail`.

use crate::filter::Page;
use crate::schema::{email_attachments, email_recipients, emails, mail_outbox, mailbox_entries};
use crate::{db_run, DbConn, StoreResult};
use coffer_domain::list::Dir;
use diesel::prelude::*;

/// An email.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = emails)]
pub struct Email {
    pub id: String,
    /// Whose mail it is: a user, or a shared mailbox's user.
    pub sender_id: String,
    /// Who wrote it (a member, for a shared mailbox's mail).
    pub actor_id: String,
    pub status: String,
    pub kind: String,
    pub subject: String,
    pub body: String,
    pub acl: String,
    pub secure_body: bool,
    pub self_copy: bool,
    pub include_fingerprint: bool,
    pub expire_at: Option<i64>,
    pub parent_email_id: Option<String>,
    pub web_form_id: Option<String>,
    /// A JSON object.
    pub web_form_fields: Option<String>,
    pub error: Option<String>,
    pub created_at: i64,
    pub modified_at: i64,
    pub sent_at: Option<i64>,
    pub withdrawn_at: Option<i64>,
}

/// A recipient; `kind` 0 to, 1 cc, 2 bcc.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = email_recipients)]
pub struct Recipient {
    pub email_id: String,
    pub position: i32,
    pub kind: i32,
    pub address: String,
    pub user_id: Option<String>,
    pub ref_hash: Option<String>,
}

/// An attached version.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = email_attachments)]
pub struct Attachment {
    pub id: String,
    pub email_id: String,
    pub position: i32,
    pub file_id: String,
    pub version_id: String,
    pub blob_id: String,
    pub name: String,
    pub size: i64,
    pub mime: String,
    pub created_at: i64,
    pub withdrawn: bool,
}

/// Where a user sees an email: `role` `s` (the sender's mailbox) or `r` (a recipient's).
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = mailbox_entries)]
pub struct Entry {
    pub user_id: String,
    pub email_id: String,
    pub role: String,
    pub bucket: String,
    pub is_read: bool,
    pub trashed_at: Option<i64>,
    pub created_at: i64,
    pub modified_at: i64,
}

pub fn insert(conn: &mut DbConn, e: &Email) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(emails::table).values(e).execute(conn))?;
    Ok(())
}

pub fn by_id(conn: &mut DbConn, id: &str) -> StoreResult<Option<Email>> {
    Ok(db_run!(conn => emails::table
        .find(id)
        .select(Email::as_select())
        .first(conn)
        .optional())?)
}

/// Several emails by id, in no particular order.
pub fn by_ids(conn: &mut DbConn, ids: &[String]) -> StoreResult<Vec<Email>> {
    Ok(db_run!(conn => emails::table
        .filter(emails::id.eq_any(ids))
        .select(Email::as_select())
        .load(conn))?)
}

/// Replaces every field of a draft that a `sendFile` call sets.
pub fn update(conn: &mut DbConn, e: &Email) -> StoreResult<()> {
    db_run!(conn => diesel::update(emails::table.find(&e.id))
        .set((
            emails::status.eq(&e.status),
            emails::kind.eq(&e.kind),
            emails::subject.eq(&e.subject),
            emails::body.eq(&e.body),
            emails::acl.eq(&e.acl),
            emails::secure_body.eq(e.secure_body),
            emails::self_copy.eq(e.self_copy),
            emails::include_fingerprint.eq(e.include_fingerprint),
            emails::expire_at.eq(e.expire_at),
            emails::parent_email_id.eq(&e.parent_email_id),
            emails::web_form_id.eq(&e.web_form_id),
            emails::web_form_fields.eq(&e.web_form_fields),
            emails::error.eq(&e.error),
            emails::modified_at.eq(e.modified_at),
            emails::sent_at.eq(e.sent_at),
        ))
        .execute(conn))?;
    Ok(())
}

/// Sets an email's state (and `sent_at` when it is sent), and moves the sender's entry to the
/// bucket the state shows in.
pub fn set_status(
    conn: &mut DbConn,
    id: &str,
    status: &str,
    error: Option<&str>,
    t: i64,
) -> StoreResult<()> {
    let sent_at = matches!(status, "sent" | "self_send").then_some(t);
    db_run!(conn => diesel::update(emails::table.find(id))
        .set((
            emails::status.eq(status),
            emails::error.eq(error),
            emails::modified_at.eq(t),
            emails::sent_at.eq(sent_at),
        ))
        .execute(conn))?;
    db_run!(conn => diesel::update(mailbox_entries::table
        .filter(mailbox_entries::email_id.eq(id))
        .filter(mailbox_entries::role.eq("s")))
        .set((
            mailbox_entries::bucket.eq(bucket_of(status)),
            mailbox_entries::modified_at.eq(t),
        ))
        .execute(conn))?;
    Ok(())
}

/// The sender's bucket for an email in `status`.
pub fn bucket_of(status: &str) -> &'static str {
    match status {
        "draft" => "draft",
        "queued" | "error" => "outgoing",
        _ => "sent",
    }
}

/// Dates the sender's entry of an email from `t` (the sending).
pub fn reset_sender_date(conn: &mut DbConn, id: &str, t: i64) -> StoreResult<()> {
    db_run!(conn => diesel::update(mailbox_entries::table
        .filter(mailbox_entries::email_id.eq(id))
        .filter(mailbox_entries::role.eq("s")))
        .set(mailbox_entries::created_at.eq(t))
        .execute(conn))?;
    Ok(())
}

/// Deletes an email with its recipients, attachments and entries (a draft thrown away).
pub fn delete(conn: &mut DbConn, id: &str) -> StoreResult<usize> {
    db_run!(conn => diesel::delete(mailbox_entries::table.filter(mailbox_entries::email_id.eq(id))).execute(conn))?;
    db_run!(conn => diesel::delete(email_recipients::table.filter(email_recipients::email_id.eq(id))).execute(conn))?;
    db_run!(conn => diesel::delete(email_attachments::table.filter(email_attachments::email_id.eq(id))).execute(conn))?;
    Ok(db_run!(conn => diesel::delete(emails::table.find(id)).execute(conn))?)
}

// Recipients.

pub fn set_recipients(conn: &mut DbConn, email_id: &str, rs: &[Recipient]) -> StoreResult<()> {
    db_run!(conn => diesel::delete(email_recipients::table.filter(email_recipients::email_id.eq(email_id))).execute(conn))?;
    if !rs.is_empty() {
        db_run!(conn => diesel::insert_into(email_recipients::table).values(rs).execute(conn))?;
    }
    Ok(())
}

pub fn recipients(conn: &mut DbConn, email_id: &str) -> StoreResult<Vec<Recipient>> {
    Ok(db_run!(conn => email_recipients::table
        .filter(email_recipients::email_id.eq(email_id))
        .order(email_recipients::position.asc())
        .select(Recipient::as_select())
        .load(conn))?)
}

/// The recipients of several emails, by email in position order.
pub fn recipients_of(conn: &mut DbConn, ids: &[String]) -> StoreResult<Vec<Recipient>> {
    Ok(db_run!(conn => email_recipients::table
        .filter(email_recipients::email_id.eq_any(ids))
        .order((email_recipients::email_id.asc(), email_recipients::position.asc()))
        .select(Recipient::as_select())
        .load(conn))?)
}

/// The recipient whose link reference hashes to `hash`.
pub fn recipient_by_ref(conn: &mut DbConn, hash: &str) -> StoreResult<Option<Recipient>> {
    Ok(db_run!(conn => email_recipients::table
        .filter(email_recipients::ref_hash.eq(hash))
        .select(Recipient::as_select())
        .first(conn)
        .optional())?)
}

// Attachments.

pub fn insert_attachment(conn: &mut DbConn, a: &Attachment) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(email_attachments::table).values(a).execute(conn))?;
    Ok(())
}

pub fn attachments(conn: &mut DbConn, email_id: &str) -> StoreResult<Vec<Attachment>> {
    Ok(db_run!(conn => email_attachments::table
        .filter(email_attachments::email_id.eq(email_id))
        .order((email_attachments::position.asc(), email_attachments::id.asc()))
        .select(Attachment::as_select())
        .load(conn))?)
}

/// How many files each of `ids` carries.
pub fn attachment_counts(conn: &mut DbConn, ids: &[String]) -> StoreResult<Vec<(String, i64)>> {
    Ok(db_run!(conn => email_attachments::table
        .filter(email_attachments::email_id.eq_any(ids))
        .group_by(email_attachments::email_id)
        .select((email_attachments::email_id, diesel::dsl::count_star()))
        .load(conn))?)
}

/// Marks an email withdrawn at `t` (a withdrawn email keeps its first time) and every one of
/// its attachments withdrawn; whether the email was live before.
pub fn withdraw(conn: &mut DbConn, id: &str, t: i64) -> StoreResult<bool> {
    let n = db_run!(conn => diesel::update(emails::table
        .find(id)
        .filter(emails::withdrawn_at.is_null()))
        .set((emails::withdrawn_at.eq(Some(t)), emails::modified_at.eq(t)))
        .execute(conn))?;
    db_run!(conn => diesel::update(email_attachments::table
        .filter(email_attachments::email_id.eq(id)))
        .set(email_attachments::withdrawn.eq(true))
        .execute(conn))?;
    Ok(n > 0)
}

/// Marks attachments `ids` of an email withdrawn; how many were not before.
pub fn withdraw_attachments(
    conn: &mut DbConn,
    email_id: &str,
    ids: &[String],
) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(email_attachments::table
        .filter(email_attachments::email_id.eq(email_id))
        .filter(email_attachments::id.eq_any(ids))
        .filter(email_attachments::withdrawn.eq(false)))
        .set(email_attachments::withdrawn.eq(true))
        .execute(conn))?)
}

pub fn delete_attachment(conn: &mut DbConn, id: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(email_attachments::table.find(id)).execute(conn))?)
}

pub fn last_attachment_position(conn: &mut DbConn, email_id: &str) -> StoreResult<i32> {
    let p: Option<i32> = db_run!(conn => email_attachments::table
        .filter(email_attachments::email_id.eq(email_id))
        .select(diesel::dsl::max(email_attachments::position))
        .first(conn))?;
    Ok(p.unwrap_or(0))
}

// Entries.

pub fn put_entries(conn: &mut DbConn, es: &[Entry]) -> StoreResult<()> {
    if !es.is_empty() {
        db_run!(conn => diesel::insert_into(mailbox_entries::table).values(es).execute(conn))?;
    }
    Ok(())
}

/// The entries `user_ids` hold of an email.
pub fn entries(conn: &mut DbConn, user_ids: &[String], email_id: &str) -> StoreResult<Vec<Entry>> {
    Ok(db_run!(conn => mailbox_entries::table
        .filter(mailbox_entries::email_id.eq(email_id))
        .filter(mailbox_entries::user_id.eq_any(user_ids))
        .order(mailbox_entries::role.asc())
        .select(Entry::as_select())
        .load(conn))?)
}

/// Marks `user_id`'s entries of `ids` read or unread; the number of entries changed.
pub fn set_read(
    conn: &mut DbConn,
    user_id: &str,
    ids: &[String],
    read: bool,
    t: i64,
) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(mailbox_entries::table
        .filter(mailbox_entries::user_id.eq(user_id))
        .filter(mailbox_entries::email_id.eq_any(ids)))
        .set((mailbox_entries::is_read.eq(read), mailbox_entries::modified_at.eq(t)))
        .execute(conn))?)
}

/// Moves `user_id`'s entries of `ids` to the trash.
pub fn trash(conn: &mut DbConn, user_id: &str, ids: &[String], t: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(mailbox_entries::table
        .filter(mailbox_entries::user_id.eq(user_id))
        .filter(mailbox_entries::email_id.eq_any(ids))
        .filter(mailbox_entries::trashed_at.is_null()))
        .set((mailbox_entries::trashed_at.eq(t), mailbox_entries::modified_at.eq(t)))
        .execute(conn))?)
}

/// The buckets of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    Inbox,
    Draft,
    Outgoing,
    Sent,
    Trash,
}

impl Bucket {
    pub fn parse(s: &str) -> Option<Bucket> {
        Some(match s {
            "inbox" => Bucket::Inbox,
            "draft" => Bucket::Draft,
            "outgoing" => Bucket::Outgoing,
            "sent" => Bucket::Sent,
            "trash" => Bucket::Trash,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Bucket::Inbox => "inbox",
            Bucket::Draft => "draft",
            Bucket::Outgoing => "outgoing",
            Bucket::Sent => "sent",
            Bucket::Trash => "trash",
        }
    }
}

/// What a mail list selects, besides the mailbox.
#[derive(Debug, Clone)]
pub struct MailQuery {
    pub bucket: Option<Bucket>,
    /// Without a bucket: the trash too (an investigation sees it), not only what is outside it.
    pub with_trashed: bool,
    pub read: Option<bool>,
    pub statuses: Vec<String>,
    pub sender_ids: Vec<String>,
    pub ids: Vec<String>,
    /// Only the mail the mailbox received (true) or sent (false).
    pub is_recipient: Option<bool>,
    pub web_form_id: Option<String>,
    /// Bounds on the entry's date (Unix seconds): `(low, low_inclusive)`, `(high, high_inclusive)`.
    pub date_low: Option<(i64, bool)>,
    pub date_high: Option<(i64, bool)>,
    pub modified_low: Option<(i64, bool)>,
    pub modified_high: Option<(i64, bool)>,
    /// `id`, `date` or `status`.
    pub order: (&'static str, Dir),
    pub offset: i64,
    pub limit: i64,
}

/// A page of `owner`'s mailbox: entries with their emails, and how many match in all.
pub fn list(conn: &mut DbConn, owner: &str, q: &MailQuery) -> StoreResult<Page<(Entry, Email)>> {
    db_run!(conn => {
        let build = || {
            let mut b = mailbox_entries::table
                .inner_join(emails::table)
                .into_boxed()
                .filter(mailbox_entries::user_id.eq(owner.to_string()));
            b = match q.bucket {
                Some(Bucket::Trash) => b.filter(mailbox_entries::trashed_at.is_not_null()),
                Some(other) => b
                    .filter(mailbox_entries::trashed_at.is_null())
                    .filter(mailbox_entries::bucket.eq(other.as_str())),
                None if q.with_trashed => b,
                None => b.filter(mailbox_entries::trashed_at.is_null()),
            };
            if let Some(r) = q.read {
                b = b.filter(mailbox_entries::is_read.eq(r));
            }
            if !q.statuses.is_empty() {
                b = b.filter(emails::status.eq_any(q.statuses.clone()));
            }
            if !q.sender_ids.is_empty() {
                b = b.filter(emails::sender_id.eq_any(q.sender_ids.clone()));
            }
            if !q.ids.is_empty() {
                b = b.filter(emails::id.eq_any(q.ids.clone()));
            }
            if let Some(r) = q.is_recipient {
                b = b.filter(mailbox_entries::role.eq(if r { "r" } else { "s" }));
            }
            if let Some(w) = &q.web_form_id {
                b = b.filter(emails::web_form_id.eq(w.clone()));
            }
            if let Some((v, inc)) = q.date_low {
                b = if inc { b.filter(mailbox_entries::created_at.ge(v)) } else { b.filter(mailbox_entries::created_at.gt(v)) };
            }
            if let Some((v, inc)) = q.date_high {
                b = if inc { b.filter(mailbox_entries::created_at.le(v)) } else { b.filter(mailbox_entries::created_at.lt(v)) };
            }
            if let Some((v, inc)) = q.modified_low {
                b = if inc { b.filter(emails::modified_at.ge(v)) } else { b.filter(emails::modified_at.gt(v)) };
            }
            if let Some((v, inc)) = q.modified_high {
                b = if inc { b.filter(emails::modified_at.le(v)) } else { b.filter(emails::modified_at.lt(v)) };
            }
            b
        };
        let total: i64 = build().count().get_result(conn)?;
        let mut b = build();
        match q.order.0 {
            "status" => crate::order_by!(b, q.order.1, emails::status),
            "id" => crate::order_by!(b, q.order.1, emails::id),
            _ => crate::order_by!(b, q.order.1, mailbox_entries::created_at),
        }
        let items = b
            .then_order_by(emails::id.asc())
            .then_order_by(mailbox_entries::role.asc())
            .offset(q.offset)
            .limit(q.limit)
            .select((Entry::as_select(), Email::as_select()))
            .load(conn)?;
        Ok(Page { items, total })
    })
}

/// How many entries of a mailbox share a bucket, trash state, read state and email state.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct Count {
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub bucket: String,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    pub trashed: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    pub read: bool,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub status: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub n: i64,
}

/// The counts of one mailbox, grouped by the database.
pub fn counts(conn: &mut DbConn, owner: &str) -> StoreResult<Vec<Count>> {
    let sql = "SELECT e.bucket AS bucket, (e.trashed_at IS NOT NULL) AS trashed, \
               e.is_read AS read, m.status AS status, COUNT(*) AS n \
               FROM mailbox_entries e JOIN emails m ON m.id = e.email_id \
               WHERE e.user_id = $1 \
               GROUP BY e.bucket, (e.trashed_at IS NOT NULL), e.is_read, m.status";
    Ok(db_run!(conn => crate::fixed::sql(sql)
        .bind::<diesel::sql_types::Text, _>(owner)
        .load::<Count>(conn))?)
}

// The outbox side.

/// The states of the outbox messages of an email.
pub fn message_states(
    conn: &mut DbConn,
    email_id: &str,
) -> StoreResult<Vec<(String, Option<String>)>> {
    Ok(db_run!(conn => mail_outbox::table
        .filter(mail_outbox::email_id.eq(email_id))
        .select((mail_outbox::state, mail_outbox::last_error))
        .load(conn))?)
}

/// The email an outbox message belongs to.
pub fn email_of_message(conn: &mut DbConn, message_id: &str) -> StoreResult<Option<String>> {
    Ok(db_run!(conn => mail_outbox::table
        .find(message_id)
        .select(mail_outbox::email_id)
        .first::<Option<String>>(conn)
        .optional())?
    .flatten())
}

/// Settles a queued email once its outbox messages are all done: `sent` when each was sent,
/// `error` when one failed for good or expired unsent. An email with messages still queued stays `queued`.
pub fn settle(conn: &mut DbConn, email_id: &str, t: i64) -> StoreResult<Option<&'static str>> {
    let Some(e) = by_id(conn, email_id)? else {
        return Ok(None);
    };
    if e.status != "queued" {
        return Ok(None);
    }
    let states = message_states(conn, email_id)?;
    if states.iter().any(|(s, _)| s == "queued") {
        return Ok(None);
    }
    let failed = states.iter().find(|(s, _)| s == "error" || s == "expired");
    let status = if failed.is_some() { "error" } else { "sent" };
    let error = failed.map(|_| "A recipient's message could not be delivered.");
    set_status(conn, email_id, status, error, t)?;
    crate::events::insert(
        conn,
        &crate::models::NewEvent {
            id: uuid::Uuid::now_v7().to_string(),
            subject: format!("mail.email.{status}"),
            actor_id: None,
            data: serde_json::json!({"id": email_id, "senderId": e.sender_id, "status": status})
                .to_string(),
            created_at: t,
        },
    )?;
    Ok(Some(status))
}

/// The uploads opened on a draft and not finished.
pub fn open_uploads(conn: &mut DbConn, email_id: &str) -> StoreResult<i64> {
    use crate::schema::uploads;
    Ok(db_run!(conn => uploads::table
        .filter(uploads::email_id.eq(email_id))
        .filter(uploads::result_file_id.is_null())
        .count()
        .get_result(conn))?)
}
