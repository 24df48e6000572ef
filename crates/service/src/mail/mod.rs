//! Secure mail (docs/mail.md): drafts, sending, mailboxes and their buckets, recipients,
//! attachments and their content, counters, read state, trash, withdrawal.
//!
//! An email belongs to a mailbox: the caller's own, or a shared mailbox the caller acts for.
//! Its sender's entry shows it as a draft, outgoing or sent; each recipient with an account gets
//! an inbox entry in the transaction that sends it; each outside recipient gets a message through
//! the outbox with a link whose reference is stored only hashed. Attachments are stored versions:
//! the blob counts the attachment as a reference, so no byte is copied and none goes while the
//! email keeps it. A file uploaded onto a draft attaches as the upload completes
//! ([`attach_uploaded`], the content core's upload completion).
//!
//! The area: this module (mail and what its parts share), outside recipients and their reads by
//! reference ([`access`]), shared mailboxes ([`shared_mailboxes`]), the address book
//! ([`contacts`]) and the outbox as the operator sees it, with the expiry of queued messages
//! ([`outbox`]). It builds on `content` and `identity`.

pub mod access;
pub mod contacts;
pub mod outbox;
pub mod shared_mailboxes;

use crate::content::files::Download;
use crate::content::uploads::InitiateInput;
use crate::content::views::UploadView;
use crate::content::{live, require_file};
use crate::platform::auth::Caller;
use crate::platform::events;
use crate::platform::views::Listed;
use crate::{now, rfc3339, Ctx, Result};
use coffer_domain::content::Action;
use coffer_domain::mail::{self as rules, Acl, SendInput};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::emails::{self as store, Attachment, Email, Entry, Recipient};
pub use coffer_store::emails::{Bucket, MailQuery};
use coffer_store::DbConn;
use serde::Serialize;
use serde_json::json;
use std::collections::HashMap;
use utoipa::ToSchema;

/// The access level of an email sent without one.
pub const DEFAULT_ACL: Acl = Acl::VerifyRecipient;

/// A user as mail shows one (the reference's `UserBasic`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PersonView {
    pub id: String,
    pub name: String,
    pub email: String,
    pub profile_icon: String,
}

/// A recipient (`Recipient`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecipientView {
    /// The account the address belongs to; absent for an outside address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// 0 to, 1 cc, 2 bcc.
    #[serde(rename = "type")]
    pub kind: i32,
    pub email: String,
    pub is_distribution_list: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<PersonView>,
}

/// An attachment (`Attachment`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentView {
    pub attachment_id: String,
    pub email_package_id: String,
    /// The file the version was taken from.
    pub object_id: String,
    pub name: String,
    pub size: i64,
    pub mime: String,
    pub created: String,
    pub withdrawn: bool,
    /// The file it came from is gone (the attachment still opens).
    pub deleted: bool,
    /// `allowed`, `scanning` or `disallowed`.
    pub av_status: String,
    pub fingerprint: String,
    pub fingerprint_algo: String,
}

/// An email as one mailbox sees it (`Mail`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MailView {
    pub id: String,
    /// Whose mail it is: a user, or a shared mailbox.
    pub sender_id: String,
    /// `draft`, `queued`, `sent`, `error` or `self_send`.
    pub status: String,
    /// `original`, `forward`, `reply` or `resend`.
    #[serde(rename = "type")]
    pub kind: String,
    /// When it reached this mailbox (sent, received, or last saved as a draft).
    pub date: String,
    pub modified_date: String,
    /// In the trash of this mailbox.
    pub deleted: bool,
    pub email_package_id: String,
    pub is_preview: bool,
    /// This mailbox sent it.
    pub is_user_sent: bool,
    pub secure_body: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_email_id: Option<String>,
    /// Why sending failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub subject: String,
    pub attachment_count: i64,
    /// When its links stop working.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withdrawn_date: Option<String>,
    /// `allowed`, or `scanning` while an attachment is scanned, or `disallowed`.
    pub av_status: String,
    pub is_read: bool,
    /// `inbox`, `draft`, `outgoing`, `sent` or `trash`.
    pub bucket: String,
    /// The body as written.
    pub body: String,
    /// The body as HTML, rebuilt from its checked pieces (nothing in it runs script).
    pub html_body: String,
    /// The sender's address.
    pub email_from: String,
    /// `no_auth`, `internal`, `anyone_auth` or `verify_recipient`.
    pub acl: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_form_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub web_form_fields: Option<serde_json::Value>,
    pub sender: PersonView,
    /// The shared mailbox it belongs to, when it is one's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_mailbox_id: Option<String>,
    /// Who wrote it, when that is not the sender (a member of a shared mailbox).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<PersonView>,
    /// With `with=recipients`; bcc recipients only for the sender.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipients: Option<Vec<RecipientView>>,
}

/// Counts of one mailbox (`MailCounters`).
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MailCounters {
    pub draft: i64,
    pub inbox: i64,
    pub inbox_unread: i64,
    pub outgoing: i64,
    pub outgoing_error: i64,
    pub outgoing_queued: i64,
    pub outgoing_transferring: i64,
    pub outgoing_transferring_ids: Vec<String>,
    pub trash: i64,
}

/// What a bulk change came to (`BulkOperationInteger`).
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BulkResult {
    pub success_ids: Vec<String>,
    pub errors: Vec<BulkError>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BulkError {
    pub id: String,
    pub code: String,
}

pub(super) fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

pub(super) fn denied(why: &str) -> Error {
    ApiError::new(ErrorCode::AccessUser)
        .with_message(format!("Insufficient access permissions ({why})."))
        .into()
}

/// Shared mailboxes as mail sees them.
mod shared {
    use crate::Result;
    use coffer_store::DbConn;

    pub use crate::mail::shared_mailboxes::{active_mailboxes, require_active_member};

    pub fn is_shared_mailbox(c: &mut DbConn, user: &str) -> Result<bool> {
        Ok(coffer_store::shared_mailboxes::is_shared_mailbox(c, user)?)
    }
}

/// The mailbox the caller acts for: their own, or a shared mailbox they are an active member of
/// (403 `ERR_ACCESS_USER` otherwise).
pub fn mailbox(c: &mut DbConn, caller: &str, shared: Option<&str>) -> Result<String> {
    match shared {
        None => Ok(caller.to_string()),
        Some(m) if m == caller => Ok(caller.to_string()),
        Some(m) => {
            shared::require_active_member(c, m, caller)?;
            Ok(m.to_string())
        }
    }
}

/// The mailboxes whose mail the caller reads: their own and their active shared mailboxes.
fn readable_mailboxes(c: &mut DbConn, caller: &str) -> Result<Vec<String>> {
    let mut out = vec![caller.to_string()];
    out.extend(shared::active_mailboxes(c, caller)?);
    Ok(out)
}

fn person(c: &mut DbConn, cache: &mut HashMap<String, PersonView>, id: &str) -> Result<PersonView> {
    if let Some(p) = cache.get(id) {
        return Ok(p.clone());
    }
    let p = match coffer_store::users::by_id(c, id)? {
        Some(u) => PersonView {
            id: u.id,
            name: u.name,
            email: u.email,
            profile_icon: String::new(),
        },
        None => PersonView {
            id: id.to_string(),
            name: String::new(),
            email: String::new(),
            profile_icon: String::new(),
        },
    };
    cache.insert(id.to_string(), p.clone());
    Ok(p)
}

/// The views of listed entries, as the mailbox of `viewer` shows them (bcc recipients only on
/// mail it sent).
pub fn views(
    c: &mut DbConn,
    rows: &[(Entry, Email)],
    with_recipients: bool,
    viewer: &str,
) -> Result<Vec<MailView>> {
    let ids: Vec<String> = rows.iter().map(|(_, e)| e.id.clone()).collect();
    let counts: HashMap<String, i64> = store::attachment_counts(c, &ids)?.into_iter().collect();
    let mut recipients: HashMap<String, Vec<Recipient>> = HashMap::new();
    if with_recipients {
        for r in store::recipients_of(c, &ids)? {
            recipients.entry(r.email_id.clone()).or_default().push(r);
        }
    }
    let mut people = HashMap::new();
    // Whether each sender is a shared mailbox, asked once per sender.
    let mut shared_senders: HashMap<String, bool> = HashMap::new();
    let mut out = Vec::with_capacity(rows.len());
    for (entry, e) in rows {
        let sender = person(c, &mut people, &e.sender_id)?;
        let actor = if e.actor_id != e.sender_id {
            Some(person(c, &mut people, &e.actor_id)?)
        } else {
            None
        };
        let shared = match shared_senders.get(&e.sender_id) {
            Some(b) => *b,
            None => {
                let b = shared::is_shared_mailbox(c, &e.sender_id)?;
                shared_senders.insert(e.sender_id.clone(), b);
                b
            }
        };
        let rs = match recipients.remove(&e.id) {
            Some(list) => Some(recipient_views(
                c,
                &mut people,
                list,
                entry.role == "s" || e.sender_id == viewer,
            )?),
            None if with_recipients => Some(Vec::new()),
            None => None,
        };
        out.push(MailView {
            id: e.id.clone(),
            sender_id: e.sender_id.clone(),
            status: e.status.clone(),
            kind: e.kind.clone(),
            date: rfc3339(entry.created_at),
            modified_date: rfc3339(e.modified_at),
            deleted: entry.trashed_at.is_some(),
            email_package_id: e.id.clone(),
            is_preview: false,
            is_user_sent: entry.role == "s",
            secure_body: e.secure_body,
            parent_email_id: e.parent_email_id.clone(),
            error: e.error.clone(),
            subject: e.subject.clone(),
            attachment_count: counts.get(&e.id).copied().unwrap_or(0),
            expiration_date: e.expire_at.map(rfc3339),
            withdrawn_date: e.withdrawn_at.map(rfc3339),
            av_status: "allowed".into(),
            is_read: entry.is_read || entry.role == "s",
            bucket: if entry.trashed_at.is_some() {
                "trash".into()
            } else {
                entry.bucket.clone()
            },
            body: e.body.clone(),
            html_body: rules::body_html(&e.body),
            email_from: sender.email.clone(),
            acl: e.acl.clone(),
            web_form_id: e.web_form_id.clone(),
            web_form_fields: e
                .web_form_fields
                .as_deref()
                .and_then(|f| serde_json::from_str(f).ok()),
            sender,
            shared_mailbox_id: shared.then(|| e.sender_id.clone()),
            actor,
            recipients: rs,
        });
    }
    Ok(out)
}

/// The views of an email's recipients; bcc ones only when `show_bcc`.
pub fn recipient_views(
    c: &mut DbConn,
    people: &mut HashMap<String, PersonView>,
    list: Vec<Recipient>,
    show_bcc: bool,
) -> Result<Vec<RecipientView>> {
    // The outside addresses that are distribution lists (listed in lower case), asked once.
    let outside: Vec<String> = list
        .iter()
        .filter(|r| r.user_id.is_none())
        .map(|r| r.address.to_ascii_lowercase())
        .collect();
    let lists: std::collections::HashSet<String> = coffer_store::external_dls::listed(c, &outside)?
        .into_iter()
        .collect();
    let mut out = Vec::with_capacity(list.len());
    for r in list {
        if r.kind == 2 && !show_bcc {
            continue;
        }
        let user = match &r.user_id {
            Some(id) => Some(person(c, people, id)?),
            None => None,
        };
        out.push(RecipientView {
            is_distribution_list: r.user_id.is_none()
                && lists.contains(&r.address.to_ascii_lowercase()),
            user_id: r.user_id,
            kind: r.kind,
            email: r.address,
            user,
        });
    }
    Ok(out)
}

/// The views of emails of one mailbox, in the order of `ids` (those without a live entry
/// there left out): what search shows of the mail it found.
pub fn views_in(c: &mut DbConn, mailbox: &str, ids: &[String]) -> Result<Vec<MailView>> {
    let boxes = [mailbox.to_string()];
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        let entry = store::entries(c, &boxes, id)?
            .into_iter()
            .find(|e| e.trashed_at.is_none());
        if let (Some(entry), Some(e)) = (entry, store::by_id(c, id)?) {
            rows.push((entry, e));
        }
    }
    views(c, &rows, false, mailbox)
}

/// The entry through which `caller` (or one of their active shared mailboxes) sees an email:
/// the sender's entry first. 404 for an email they do not see.
fn entry_of(c: &mut DbConn, caller: &str, id: &str) -> Result<(Entry, Email)> {
    let boxes = readable_mailboxes(c, caller)?;
    entry_in(c, &boxes, id)
}

/// As [`entry_of`], with the caller's mailboxes read once before.
fn entry_in(c: &mut DbConn, boxes: &[String], id: &str) -> Result<(Entry, Email)> {
    if uuid::Uuid::parse_str(id).is_err() {
        return Err(not_found());
    }
    let entries = store::entries(c, boxes, id)?;
    let entry = entries.into_iter().next().ok_or_else(not_found)?;
    let e = store::by_id(c, id)?.ok_or_else(not_found)?;
    Ok((entry, e))
}

/// `GET /rest/mail/{id}`.
pub fn get(ctx: &Ctx, caller: &str, id: &str, with_recipients: bool) -> Result<MailView> {
    ctx.read(|c| {
        let row = entry_of(c, caller, id)?;
        let mut v = views(c, std::slice::from_ref(&row), with_recipients, caller)?;
        v.pop().ok_or_else(not_found)
    })
}

/// `GET /rest/mail`: one mailbox's mail.
pub fn list(
    ctx: &Ctx,
    caller: &str,
    shared: Option<&str>,
    q: &MailQuery,
    with_recipients: bool,
) -> Result<Listed<MailView>> {
    ctx.read(|c| {
        let owner = mailbox(c, caller, shared)?;
        page_of(c, &owner, q, with_recipients)
    })
}

/// A page of `owner`'s mailbox as it shows it, in the caller's transaction.
pub fn page_of(
    c: &mut DbConn,
    owner: &str,
    q: &MailQuery,
    with_recipients: bool,
) -> Result<Listed<MailView>> {
    let page = store::list(c, owner, q)?;
    Ok(Listed {
        items: views(c, &page.items, with_recipients, owner)?,
        total: page.total,
        offset: q.offset,
        limit: q.limit,
    })
}

/// `GET /rest/mail/{id}/recipients`.
pub fn recipients(ctx: &Ctx, caller: &str, id: &str) -> Result<Vec<RecipientView>> {
    ctx.read(|c| {
        let (entry, e) = entry_of(c, caller, id)?;
        let list = store::recipients(c, &e.id)?;
        let mut people = HashMap::new();
        recipient_views(c, &mut people, list, entry.role == "s")
    })
}

pub(super) fn attachment_view(c: &mut DbConn, a: &Attachment) -> Result<AttachmentView> {
    let version = coffer_store::content::version(c, &a.version_id)?;
    let file_gone = match coffer_store::content::object(c, &a.file_id)? {
        Some(o) => o.deleted_at.is_some(),
        None => true,
    };
    Ok(AttachmentView {
        attachment_id: a.id.clone(),
        email_package_id: a.email_id.clone(),
        object_id: a.file_id.clone(),
        name: a.name.clone(),
        size: a.size,
        mime: a.mime.clone(),
        created: rfc3339(a.created_at),
        withdrawn: a.withdrawn,
        deleted: file_gone,
        av_status: version
            .map(|v| v.av_status)
            .unwrap_or_else(|| "allowed".into()),
        fingerprint: a.blob_id.clone(),
        fingerprint_algo: "sha3-256".into(),
    })
}

/// `GET /rest/mail/{id}/attachments`.
pub fn attachments(
    ctx: &Ctx,
    caller: &str,
    id: &str,
    offset: i64,
    limit: i64,
) -> Result<Listed<AttachmentView>> {
    ctx.read(|c| {
        let (_, e) = entry_of(c, caller, id)?;
        attachment_page(c, &e.id, offset, limit)
    })
}

/// A page of an email's attachments in their order, in the caller's transaction.
pub fn attachment_page(
    c: &mut DbConn,
    email_id: &str,
    offset: i64,
    limit: i64,
) -> Result<Listed<AttachmentView>> {
    let all = store::attachments(c, email_id)?;
    let total = all.len() as i64;
    let mut items = Vec::new();
    for a in all
        .iter()
        .skip(offset.max(0) as usize)
        .take(limit.max(0) as usize)
    {
        items.push(attachment_view(c, a)?);
    }
    Ok(Listed {
        items,
        total,
        offset,
        limit,
    })
}

/// Whether an email's files may still be opened by a recipient: not withdrawn, not expired.
fn open_for_recipient(e: &Email, t: i64) -> Result<()> {
    if e.withdrawn_at.is_some() {
        return Err(denied("the email was withdrawn"));
    }
    if e.expire_at.is_some_and(|x| x < t) {
        return Err(denied("the email has expired"));
    }
    Ok(())
}

/// Decides a download of an attachment: 403 while its version is scanned or when it was found
/// infected, for recipients also once the email expired or was withdrawn.
pub fn attachment_download(
    ctx: &Ctx,
    caller: &str,
    email_id: &str,
    attachment_id: &str,
) -> Result<Download> {
    ctx.read(|c| {
        let (entry, e) = entry_of(c, caller, email_id)?;
        if entry.role != "s" {
            open_for_recipient(&e, now())?;
        }
        attachment_of(c, &e, attachment_id)
    })
}

/// The download of an email's attachment, once access to the email was decided.
pub(super) fn attachment_of(c: &mut DbConn, e: &Email, attachment_id: &str) -> Result<Download> {
    let a = store::attachments(c, &e.id)?
        .into_iter()
        .find(|a| a.id == attachment_id)
        .ok_or_else(not_found)?;
    if a.withdrawn {
        return Err(ApiError::new(ErrorCode::EntityIsDeletedAttachment)
            .with_message("The sender has withdrawn the file.")
            .into());
    }
    if let Some(v) = coffer_store::content::version(c, &a.version_id)? {
        crate::content::files::scanned(&v)?;
    }
    Ok(Download {
        file_id: a.file_id.clone(),
        version_id: a.version_id.clone(),
        name: a.name.clone(),
        mime: a.mime.clone(),
        size: a.size,
        blob: a.blob_id.clone(),
        owner_id: e.sender_id.clone(),
        preview: false,
    })
}

/// Records that an attachment was downloaded (`mail.attachment.download`): by a user
/// (`actor`), or by an outside recipient (`recipient`, their address).
pub async fn record_download(
    ctx: &Ctx,
    actor: Option<&str>,
    recipient: Option<&str>,
    email_id: &str,
    d: &Download,
) -> Result<()> {
    let actor = actor.map(str::to_string);
    let mut data = json!({"emailId": email_id, "fileId": d.file_id, "versionId": d.version_id});
    if let Some(r) = recipient {
        // The sender's webhooks see their outside recipients' downloads.
        data["recipient"] = json!(r);
        data["userId"] = json!(d.owner_id);
    }
    ctx.write_owned(move |c| events::record(c, "mail.attachment.download", actor.as_deref(), data))
        .await
}

/// `GET /rest/mail/actions/counters` (and per shared mailbox).
pub fn counters_of(c: &mut DbConn, owner: &str) -> Result<MailCounters> {
    let mut out = MailCounters::default();
    for k in store::counts(c, owner)? {
        let n = k.n;
        if k.trashed {
            out.trash += n;
            continue;
        }
        match k.bucket.as_str() {
            "inbox" => {
                out.inbox += n;
                if !k.read {
                    out.inbox_unread += n;
                }
            }
            "draft" => out.draft += n,
            "outgoing" => {
                out.outgoing += n;
                match k.status.as_str() {
                    "error" => out.outgoing_error += n,
                    _ => out.outgoing_queued += n,
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

pub fn counters(ctx: &Ctx, caller: &str) -> Result<MailCounters> {
    ctx.read(|c| counters_of(c, caller))
}

/// The counters of one shared mailbox (`MailIdCounters`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MailIdCounters {
    /// The mailbox (its account's user id).
    pub id: String,
    pub counters: MailCounters,
}

/// `{data: [MailIdCounters]}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MailCountersList {
    pub data: Vec<MailIdCounters>,
}

/// `GET /rest/sharedMailboxes/mail/actions/counters`: each shared mailbox the caller has active,
/// or those of `ids` among them.
pub fn shared_counters(
    ctx: &Ctx,
    caller: &str,
    ids: Option<&[String]>,
) -> Result<MailCountersList> {
    ctx.read(|c| {
        let mut data = Vec::new();
        for m in shared::active_mailboxes(c, caller)? {
            if ids.is_some_and(|ids| !ids.contains(&m)) {
                continue;
            }
            let counters = counters_of(c, &m)?;
            data.push(MailIdCounters { id: m, counters });
        }
        Ok(MailCountersList { data })
    })
}

/// Applies `each` to every id the caller sees; without `partial` the first failure fails all.
fn bulk(
    c: &mut DbConn,
    caller: &str,
    ids: &[String],
    partial: bool,
    mut each: impl FnMut(&mut DbConn, &Entry, &Email) -> Result<()>,
) -> Result<BulkResult> {
    let mut out = BulkResult::default();
    let boxes = readable_mailboxes(c, caller)?;
    for id in ids {
        let r = entry_in(c, &boxes, id).and_then(|(entry, e)| each(c, &entry, &e));
        match r {
            Ok(()) => out.success_ids.push(id.clone()),
            Err(Error::Api(a)) if partial => out.errors.push(BulkError {
                id: id.clone(),
                code: a.code.as_str().to_string(),
            }),
            Err(Error::Api(a)) => return Err(a.with_failed_ids(vec![id.clone()]).into()),
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// `PATCH /rest/mail/actions/read` and `…/unread`.
pub fn mark(
    ctx: &Ctx,
    caller: &str,
    ids: &[String],
    read: bool,
    partial: bool,
) -> Result<BulkResult> {
    ctx.write(|c| {
        let t = now();
        let r = bulk(c, caller, ids, partial, |c, entry, e| {
            store::set_read(c, &entry.user_id, std::slice::from_ref(&e.id), read, t)?;
            Ok(())
        })?;
        if !r.success_ids.is_empty() {
            let subject = if read {
                "mail.email.read"
            } else {
                "mail.email.unread"
            };
            events::record(c, subject, Some(caller), json!({"ids": r.success_ids}))?;
        }
        Ok(r)
    })
}

/// `PATCH /rest/mail/actions/trash`: the caller's entries go to the trash; an email still being
/// sent cannot (403 `ERR_ENTITY_EMAIL_IS_NOT_COMPLETED`).
pub fn trash(ctx: &Ctx, caller: &str, ids: &[String], partial: bool) -> Result<BulkResult> {
    ctx.write(|c| {
        let t = now();
        let r = bulk(c, caller, ids, partial, |c, entry, e| {
            if entry.role == "s" && e.status == "queued" {
                return Err(ApiError::new(ErrorCode::EntityEmailIsNotCompleted).into());
            }
            if entry.trashed_at.is_some() {
                return Err(ApiError::new(ErrorCode::EntityDeleted).into());
            }
            store::trash(c, &entry.user_id, std::slice::from_ref(&e.id), t)?;
            Ok(())
        })?;
        if !r.success_ids.is_empty() {
            events::record(
                c,
                "mail.email.trash",
                Some(caller),
                json!({"ids": r.success_ids}),
            )?;
        }
        Ok(r)
    })
}

/// The email `id` as `caller` may withdraw it: its sender's (the caller's own mailbox, or the
/// shared mailbox `shared` they act for, or any of their active shared mailboxes), or any sent
/// email for a system administrator. 404 when they do not see it, 403 `ERR_ACCESS_NOT_SENDER`
/// when they only received it, 403 `ERR_ENTITY_EMAIL_IS_NOT_COMPLETED` for a draft (never sent:
/// it is deleted instead).
fn withdrawable(c: &mut DbConn, caller: &Caller, shared: Option<&str>, id: &str) -> Result<Email> {
    if uuid::Uuid::parse_str(id).is_err() {
        return Err(not_found());
    }
    let boxes = match shared {
        Some(_) => vec![mailbox(c, caller.user_id(), shared)?],
        None => readable_mailboxes(c, caller.user_id())?,
    };
    let entries = store::entries(c, &boxes, id)?;
    let is_sender = entries.iter().any(|en| en.role == "s");
    let e = store::by_id(c, id)?.ok_or_else(not_found)?;
    if !caller.may_withdraw(is_sender) {
        return Err(if entries.is_empty() {
            not_found()
        } else {
            ApiError::new(ErrorCode::AccessNotSender).into()
        });
    }
    if e.status == "draft" {
        return Err(ApiError::new(ErrorCode::EntityEmailIsNotCompleted)
            .with_message("The email has not been sent.")
            .into());
    }
    Ok(e)
}

/// `POST /rest/mail/actions/withdraw`: each email of `ids` is withdrawn: its `withdrawnDate`
/// set, its attachments withdrawn, its recipients' links and downloads refused from then on
/// (`mail.email.withdraw`). Withdrawing a withdrawn email changes nothing and succeeds. The ids
/// that fail are reported and the others withdrawn; when every id fails, the first failure
/// answers, naming them all in `failedIds`.
pub fn withdraw(ctx: &Ctx, caller: &Caller, ids: &[String]) -> Result<BulkResult> {
    ctx.write(|c| {
        let t = now();
        let mut out = BulkResult::default();
        let mut first: Option<ApiError> = None;
        for id in ids {
            let r = withdrawable(c, caller, None, id).and_then(|e| {
                if store::withdraw(c, &e.id, t)? {
                    events::record(
                        c,
                        "mail.email.withdraw",
                        Some(caller.user_id()),
                        // `userId`: the sender's webhooks see an administrator's withdrawal.
                        json!({"id": e.id, "senderId": e.sender_id, "userId": e.sender_id}),
                    )?;
                }
                Ok(())
            });
            match r {
                Ok(()) => out.success_ids.push(id.clone()),
                Err(Error::Api(a)) => {
                    out.errors.push(BulkError {
                        id: id.clone(),
                        code: a.code.as_str().to_string(),
                    });
                    if first.is_none() {
                        first = Some(a);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        match first {
            Some(a) if out.success_ids.is_empty() => {
                let failed = out.errors.into_iter().map(|b| b.id).collect();
                Err(a.with_failed_ids(failed).into())
            }
            _ => Ok(out),
        }
    })
}

/// `POST /rest/mail/{id}/actions/withdrawFiles`: the attachments `attachment_ids` of email `id`
/// are withdrawn (`mail.attachment.withdraw`); the email and its other files stay open. An id
/// that is not one of the email's attachments is 422 `ERR_INVALID_PARAMETER` (`failedIds`) and
/// withdraws nothing; withdrawn attachments stay withdrawn and succeed.
pub fn withdraw_files(
    ctx: &Ctx,
    caller: &Caller,
    shared: Option<&str>,
    id: &str,
    attachment_ids: &[String],
) -> Result<()> {
    ctx.write(|c| {
        let e = withdrawable(c, caller, shared, id)?;
        let known: std::collections::HashSet<String> =
            store::attachments(c, &e.id)?.into_iter().map(|a| a.id).collect();
        let unknown: Vec<String> = attachment_ids
            .iter()
            .filter(|a| !known.contains(*a))
            .cloned()
            .collect();
        if !unknown.is_empty() {
            return Err(ApiError::field(ErrorCode::InvalidParameter, "id:in")
                .with_failed_ids(unknown)
                .into());
        }
        if store::withdraw_attachments(c, &e.id, attachment_ids)? > 0 {
            events::record(
                c,
                "mail.attachment.withdraw",
                Some(caller.user_id()),
                json!({"emailId": e.id, "senderId": e.sender_id, "userId": e.sender_id, "ids": attachment_ids}),
            )?;
        }
        Ok(())
    })
}

/// The caller's draft `id` (as its sender): 404 when they do not see it, 403
/// `ERR_ACCESS_NOT_SENDER` when they only received it, 403 `ERR_ENTITY_EMAIL_NOT_DRAFT` when
/// it was sent.
fn own_draft(c: &mut DbConn, caller: &str, id: &str) -> Result<Email> {
    let (entry, e) = entry_of(c, caller, id)?;
    if entry.role != "s" {
        return Err(ApiError::new(ErrorCode::AccessNotSender).into());
    }
    if e.status != "draft" {
        return Err(ApiError::new(ErrorCode::EntityEmailNotDraft).into());
    }
    Ok(e)
}

/// `DELETE /rest/mail/{id}`: a draft goes for good (its attachments let go of their bytes); a
/// sent email cannot (403 `ERR_ENTITY_EMAIL_IS_SENT`; the trash is for those).
pub fn delete(ctx: &Ctx, caller: &str, id: &str) -> Result<()> {
    ctx.write(|c| {
        let (entry, e) = entry_of(c, caller, id)?;
        if entry.role != "s" {
            return Err(ApiError::new(ErrorCode::AccessNotSender).into());
        }
        if e.status != "draft" {
            return Err(ApiError::new(ErrorCode::EntityEmailIsSent).into());
        }
        let t = now();
        for a in store::attachments(c, &e.id)? {
            coffer_store::content::release_blob(c, &a.blob_id, t)?;
        }
        store::delete(c, &e.id)?;
        events::record(
            c,
            "mail.email.delete",
            Some(caller),
            json!({"id": e.id, "senderId": e.sender_id}),
        )
    })
}

/// Delivers `email` into `owner`'s inbox as its one recipient, and into `sender`'s sent mail
/// when someone else sends it: what a web-form submission and a request-file reply become.
pub(crate) fn deliver_to_owner(
    c: &mut DbConn,
    email: &Email,
    owner: &coffer_store::models::User,
    sender: &str,
    t: i64,
) -> Result<()> {
    store::set_recipients(
        c,
        &email.id,
        &[Recipient {
            email_id: email.id.clone(),
            position: 0,
            kind: 0,
            address: owner.email.clone(),
            user_id: Some(owner.id.clone()),
            ref_hash: None,
        }],
    )?;
    let entry = |user: &str, role: &str, bucket: &str, read: bool| Entry {
        user_id: user.to_string(),
        email_id: email.id.clone(),
        role: role.into(),
        bucket: bucket.into(),
        is_read: read,
        trashed_at: None,
        created_at: t,
        modified_at: t,
    };
    let mut entries = vec![entry(&owner.id, "r", "inbox", false)];
    if sender != owner.id {
        entries.push(entry(sender, "s", "sent", true));
    }
    store::put_entries(c, &entries)?;
    Ok(())
}

/// Attaches the current version of `file` to `email` (its blob counts one more reference).
pub(crate) fn attach(
    c: &mut DbConn,
    email: &Email,
    file: &coffer_store::models::Object,
    t: i64,
) -> Result<()> {
    let vid = file.current_version_id.clone().ok_or_else(not_found)?;
    let v = coffer_store::content::version(c, &vid)?.ok_or_else(not_found)?;
    let blob = coffer_store::content::blob(c, &v.blob_id)?.ok_or_else(not_found)?;
    let position = store::last_attachment_position(c, &email.id)? + 1;
    coffer_store::content::reference_blob(c, &blob.id, blob.size, &blob.md5, t)?;
    store::insert_attachment(
        c,
        &Attachment {
            id: uuid::Uuid::new_v4().to_string(),
            email_id: email.id.clone(),
            position,
            file_id: file.id.clone(),
            version_id: v.id.clone(),
            blob_id: v.blob_id.clone(),
            name: file.name.clone(),
            size: v.size,
            mime: v.mime.clone(),
            created_at: t,
            withdrawn: false,
        },
    )?;
    Ok(())
}

/// Attaches the file an upload opened on a draft completed: the content core's upload
/// completion ([`crate::content::uploads::OnComplete`]), which `cofferd` registers at start-up;
/// called in the upload's commit. A draft sent or deleted in the meantime takes nothing; the file
/// stays where it was stored.
pub fn attach_uploaded(
    c: &mut DbConn,
    email_id: &str,
    file: &coffer_store::models::Object,
) -> Result<()> {
    let Some(e) = store::by_id(c, email_id)? else {
        return Ok(());
    };
    if e.status != "draft" {
        return Ok(());
    }
    let t = now();
    attach(c, &e, file, t)?;
    events::record(
        c,
        "mail.email.update",
        Some(&file.creator_id),
        json!({"id": e.id, "senderId": e.sender_id, "fileId": file.id}),
    )
}

/// `POST /rest/mail/{id}/actions/initiateUpload`: opens a chunked upload whose file attaches to
/// the caller's draft `id` when it completes ([`attach_uploaded`]); the file is stored in the
/// caller's system folder for mail attachments.
pub fn initiate_upload(
    ctx: &Ctx,
    caller: &str,
    id: &str,
    input: &InitiateInput,
) -> Result<UploadView> {
    let folder = ctx.read(|c| {
        own_draft(c, caller, id)?;
        let u = coffer_store::users::by_id(c, caller)?.ok_or_else(not_found)?;
        Ok(u.mydir_id)
    })?;
    crate::content::uploads::initiate_onto(ctx, caller, &folder, id, input)
}

/// Checks the files to attach: each readable by the caller, live, outside secure folders (403
/// `ERR_ENTITY_IS_SECURE_FOLDER`), and scanned clean.
fn files_to_attach(
    c: &mut DbConn,
    caller: &str,
    ids: &[String],
) -> Result<Vec<coffer_store::models::Object>> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let (o, _) =
            require_file(c, caller, id, Action::Download).map_err(|e| field(e, "files"))?;
        live(&o)?;
        crate::content::not_secure(c, &o)?;
        let vid = o.current_version_id.clone().ok_or_else(not_found)?;
        let v = coffer_store::content::version(c, &vid)?.ok_or_else(not_found)?;
        crate::content::files::scanned(&v)?;
        out.push(o);
    }
    Ok(out)
}

/// Names the input field an error is about, when it names none.
fn field(e: Error, name: &str) -> Error {
    match e {
        Error::Api(mut a) if a.field.is_none() => {
            a.field = Some(name.to_string());
            a.into()
        }
        e => e,
    }
}

/// What one recipient is.
struct Resolved {
    kind: i32,
    address: String,
    user_id: Option<String>,
}

fn resolve(c: &mut DbConn, input: &SendInput) -> Result<Vec<Resolved>> {
    let mut out = Vec::with_capacity(input.recipients.len());
    for (kind, address) in &input.recipients {
        let user = coffer_store::users::by_email(c, address)?.filter(|u| u.active && !u.deleted);
        out.push(Resolved {
            kind: *kind,
            address: address.clone(),
            user_id: user.map(|u| u.id),
        });
    }
    Ok(out)
}

/// `POST /rest/mail/actions/sendFile` (`draft` None) and `PUT /rest/mail/{id}/actions/sendFile`
/// (the caller's draft): saves a draft, or sends. Sending gives each recipient with an account
/// an inbox entry and each outside recipient a message with a link, in one transaction.
pub fn send(ctx: &Ctx, caller: &str, draft: Option<&str>, input: &SendInput) -> Result<MailView> {
    let base = ctx.config.base_url.trim_end_matches('/').to_string();
    let domain = ctx.config.message_domain();
    let id = ctx.write(|c| {
        let t = now();
        let owner = mailbox(c, caller, input.shared_mailbox_id.as_deref())?;
        let existing = match draft {
            Some(id) => Some(own_draft(c, caller, id)?),
            None => None,
        };
        let keep_draft = input.draft || input.uploading;
        let acl = input.acl.unwrap_or(match &existing {
            Some(e) => Acl::parse(&e.acl).unwrap_or(DEFAULT_ACL),
            None => DEFAULT_ACL,
        });
        if input.secure_body && acl == Acl::NoAuth {
            return Err(ApiError::new(ErrorCode::InputSecureBodyWithNoAuthNotAllowed).into());
        }
        if !keep_draft && input.recipients.is_empty() {
            return Err(ApiError::new(ErrorCode::InputEmailWithNoRecipientsNotAllowed).into());
        }
        let recipients = resolve(c, input)?;
        if acl == Acl::Internal {
            if let Some(r) = recipients.iter().find(|r| r.user_id.is_none()) {
                return Err(ApiError::field(ErrorCode::InvalidParameter, "acl")
                    .with_message(format!(
                        "The parameter is invalid (acl: `internal` mail reaches only addresses with an account; {} has none).",
                        r.address
                    ))
                    .into());
            }
        }
        if let Some(p) = &input.parent_email_id {
            entry_of(c, caller, p).map_err(|e| field(e, "parentEmailId"))?;
        }
        let files = files_to_attach(c, caller, &input.files)?;
        let email = Email {
            id: existing
                .as_ref()
                .map(|e| e.id.clone())
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            sender_id: existing
                .as_ref()
                .map(|e| e.sender_id.clone())
                .unwrap_or_else(|| owner.clone()),
            actor_id: caller.to_string(),
            status: "draft".into(),
            kind: input.kind.clone(),
            subject: input.subject.clone(),
            body: input.body.clone(),
            acl: acl.as_str().into(),
            secure_body: input.secure_body,
            self_copy: input.self_copy,
            include_fingerprint: input.include_fingerprint,
            expire_at: input.expire_at,
            parent_email_id: input.parent_email_id.clone(),
            web_form_id: existing.as_ref().and_then(|e| e.web_form_id.clone()),
            web_form_fields: existing.as_ref().and_then(|e| e.web_form_fields.clone()),
            error: None,
            created_at: existing.as_ref().map_or(t, |e| e.created_at),
            modified_at: t,
            sent_at: None,
            withdrawn_at: None,
        };
        if existing.is_some() {
            store::update(c, &email)?;
        } else {
            store::insert(c, &email)?;
            store::put_entries(
                c,
                &[Entry {
                    user_id: email.sender_id.clone(),
                    email_id: email.id.clone(),
                    role: "s".into(),
                    bucket: "draft".into(),
                    is_read: true,
                    trashed_at: None,
                    created_at: t,
                    modified_at: t,
                }],
            )?;
        }
        let attached: Vec<String> = store::attachments(c, &email.id)?
            .into_iter()
            .map(|a| a.file_id)
            .collect();
        for f in files.iter().filter(|f| !attached.contains(&f.id)) {
            attach(c, &email, f, t)?;
        }
        let mut rows: Vec<Recipient> = recipients
            .iter()
            .enumerate()
            .map(|(i, r)| Recipient {
                email_id: email.id.clone(),
                position: i as i32,
                kind: r.kind,
                address: r.address.clone(),
                user_id: r.user_id.clone(),
                ref_hash: None,
            })
            .collect();
        if keep_draft {
            store::set_recipients(c, &email.id, &rows)?;
            let subject = if existing.is_some() { "mail.email.update" } else { "mail.email.create" };
            events::record(
                c,
                subject,
                Some(caller),
                json!({"id": email.id, "senderId": email.sender_id, "status": "draft"}),
            )?;
            return Ok(email.id);
        }
        // Sending.
        let mut entries: Vec<Entry> = Vec::new();
        let mut receivers: Vec<String> = Vec::new();
        for r in &recipients {
            if let Some(u) = &r.user_id {
                if !receivers.contains(u) {
                    receivers.push(u.clone());
                }
            }
        }
        let only_self = recipients.iter().all(|r| r.user_id.as_deref() == Some(&email.sender_id));
        if input.self_copy && !receivers.contains(&email.sender_id) {
            receivers.push(email.sender_id.clone());
        }
        for u in &receivers {
            entries.push(Entry {
                user_id: u.clone(),
                email_id: email.id.clone(),
                role: "r".into(),
                bucket: "inbox".into(),
                is_read: false,
                trashed_at: None,
                created_at: t,
                modified_at: t,
            });
        }
        let sender = coffer_store::users::by_id(c, &email.sender_id)?.ok_or_else(not_found)?;
        let from = From {
            name: &sender.name,
            email: &sender.email,
        };
        let attachments = store::attachments(c, &email.id)?;
        let mut outside = 0;
        for (row, r) in rows.iter_mut().zip(&recipients) {
            if r.user_id.is_some() {
                continue;
            }
            let reference = coffer_oauth::secrets::new_token();
            row.ref_hash = Some(coffer_oauth::secrets::hash_token(&reference));
            let link = format!("{base}/mail/{}?ref={reference}", email.id);
            let text = outside_message(&from, &email, &attachments, &link);
            coffer_store::mail::queue(
                c,
                &coffer_store::mail::NewMessage {
                    email_id: Some(&email.id),
                    user_id: Some(&email.sender_id),
                    to: &r.address,
                    subject: &subject_line(&from, &email),
                    body: &text,
                    // The link works through the expiry second (`expire_at`); a message not sent
                    // by the second after it never is.
                    expires_at: email.expire_at.map(|x| x.saturating_add(1)),
                },
                &domain,
                t,
            )?;
            outside += 1;
        }
        store::set_recipients(c, &email.id, &rows)?;
        store::put_entries(c, &entries)?;
        let status = if only_self {
            "self_send"
        } else if outside > 0 {
            "queued"
        } else {
            "sent"
        };
        store::set_status(c, &email.id, status, None, t)?;
        // The sender's entry dates from the sending.
        store::reset_sender_date(c, &email.id, t)?;
        let addresses: Vec<String> = recipients.iter().map(|r| r.address.clone()).collect();
        crate::mail::contacts::touch_in(c, &email.sender_id, &addresses, t)?;
        events::record(
            c,
            "mail.email.send",
            Some(caller),
            json!({"id": email.id, "senderId": email.sender_id, "status": status, "recipients": recipients.len(), "attachments": attachments.len()}),
        )?;
        Ok(email.id)
    })?;
    get(ctx, caller, &id, true)
}

/// Who an email is from, as a message names them.
struct From<'a> {
    name: &'a str,
    email: &'a str,
}

fn subject_line(sender: &From, e: &Email) -> String {
    let who = if sender.name.is_empty() {
        sender.email
    } else {
        sender.name
    };
    if e.subject.is_empty() {
        format!("{who} sent you files")
    } else {
        e.subject.clone()
    }
}

/// The text an outside recipient receives: who sent it, the body (unless it is secure), the
/// files by name, and the link. No attachment's bytes are ever in it.
fn outside_message(sender: &From, e: &Email, attachments: &[Attachment], link: &str) -> String {
    let mut s = String::new();
    let who = if sender.name.is_empty() || sender.name == sender.email {
        sender.email.to_string()
    } else {
        format!("{} <{}>", sender.name, sender.email)
    };
    s.push_str(&format!("{who} sent you a secure message.\n\n"));
    if e.secure_body {
        s.push_str("The message is shown once you open the link.\n\n");
    } else if !e.body.is_empty() {
        s.push_str(&rules::body_text(&e.body));
        s.push_str("\n\n");
    }
    if !attachments.is_empty() {
        s.push_str("Files:\n");
        for a in attachments {
            s.push_str(&format!("- {} ({} bytes)", a.name, a.size));
            if e.include_fingerprint {
                s.push_str(&format!(", SHA3-256 {}", a.blob_id));
            }
            s.push('\n');
        }
        s.push('\n');
    }
    s.push_str(&format!("Open it here: {link}\n"));
    if let Some(x) = e.expire_at {
        s.push_str(&format!("The link works until {}.\n", rfc3339(x)));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outside_message_never_carries_a_secure_body() {
        let sender = From {
            name: "Ann",
            email: "ann@x.io",
        };
        let mut e = Email {
            id: "e".into(),
            sender_id: "s".into(),
            actor_id: "s".into(),
            status: "queued".into(),
            kind: "original".into(),
            subject: "Q3".into(),
            body: "the <b>secret</b> numbers".into(),
            acl: "verify_recipient".into(),
            secure_body: true,
            self_copy: false,
            include_fingerprint: true,
            expire_at: None,
            parent_email_id: None,
            web_form_id: None,
            web_form_fields: None,
            error: None,
            created_at: 0,
            modified_at: 0,
            sent_at: None,
            withdrawn_at: None,
        };
        let a = Attachment {
            id: "a".into(),
            email_id: "e".into(),
            position: 1,
            file_id: "f".into(),
            version_id: "v".into(),
            blob_id: "abc".into(),
            name: "q3.pdf".into(),
            size: 10,
            mime: "application/pdf".into(),
            created_at: 0,
            withdrawn: false,
        };
        let text = outside_message(
            &sender,
            &e,
            std::slice::from_ref(&a),
            "https://h/mail/e?ref=r",
        );
        assert!(!text.contains("secret"));
        assert!(text.contains("q3.pdf (10 bytes), SHA3-256 abc"));
        assert!(text.contains("https://h/mail/e?ref=r"));
        e.secure_body = false;
        let text = outside_message(&sender, &e, &[a], "l");
        assert!(text.contains("the secret numbers"));
        assert_eq!(subject_line(&sender, &e), "Q3");
    }
}
