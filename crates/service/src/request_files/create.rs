//! The requestor's side of request-file links: asking for files from a folder
//! (`POST /rest/folders/{id}/actions/requestFile`) or from mail
//! (`POST /rest/mail/actions/requestFile`), and withdrawing a link
//! (`DELETE /rest/requestFile/{ref}`).
//!
//! A request is checked whole before anything is written, and written in one transaction: the
//! request email (its recipients in the order given), one link per recipient, the files offered,
//! and the mail that carries each link through the mail outbox.

use super::{denied, view, RequestFileView, Visitor};
use crate::content::require_file;
use crate::platform::auth::Caller;
use crate::platform::events;
use crate::{now, Ctx, Result};
use coffer_domain::content::Action;
use coffer_domain::email::Email as Address;
use coffer_domain::request_file::{self as rules, invalid};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_oauth::secrets::{hash_token, new_token};
use coffer_store::emails::{self as mail_store, Email, Entry, Recipient};
use coffer_store::models::NewRequestFile;
use coffer_store::DbConn;
use serde_json::json;

/// The largest body of a request, in bytes (as for mail).
const BODY_MAX_BYTES: usize = 1_000_000;
/// The furthest expiry a request may set, in days.
const EXPIRE_MAX_DAYS: i64 = 3650;

/// What a request carries (both variants; the mail variant names the count `fileLimit` and may
/// name a shared mailbox, the folder variant may offer files).
#[derive(Debug, Clone, Default)]
pub struct RequestInput {
    pub to: Vec<String>,
    pub subject: String,
    pub body: Option<String>,
    /// `YYYY-MM-DD` (or an RFC 3339 time, of whose day).
    pub expire: Option<String>,
    pub count: Option<i64>,
    pub require_auth: Option<bool>,
    pub files: Vec<String>,
    pub action_id: Option<i64>,
    pub show_token: Option<i64>,
    pub shared_mailbox_id: Option<String>,
}

/// A request, checked.
struct Checked {
    recipients: Vec<String>,
    subject: String,
    body: String,
    expire_at: i64,
    count: i64,
    action_id: i64,
    show: bool,
}

/// Checks what needs no database: the addresses, subject, body (its markup and links), expiry,
/// `actionId` and `showToken`; `count_field` names the count in errors.
fn check(c: &mut DbConn, input: &RequestInput, count_field: &str, t: i64) -> Result<Checked> {
    if input.to.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "to").into());
    }
    let mut recipients: Vec<String> = Vec::new();
    for (i, a) in input.to.iter().enumerate() {
        let name = format!("to[{i}]");
        let e = Address::parse(a.trim())
            .map_err(|_| invalid(&name, "not an email address"))?
            .into_string()
            .to_ascii_lowercase();
        if coffer_store::external_dls::contains(c, &e)? {
            return Err(
                ApiError::field(ErrorCode::InputEmailIsDistributionList, name)
                    .with_message(format!(
                        "A distribution list cannot be asked for files ({e} is one)."
                    ))
                    .into(),
            );
        }
        if !recipients.contains(&e) {
            recipients.push(e);
        }
    }
    if recipients.len() > rules::MAX_RECIPIENTS {
        return Err(invalid("to", "at most 100 recipients").into());
    }
    let subject = rules::check_subject(&input.subject)?;
    let body = input.body.clone().unwrap_or_default();
    if body.len() > BODY_MAX_BYTES {
        return Err(invalid("body", "at most 1,000,000 bytes").into());
    }
    coffer_domain::mail::check_hyperlinks(&body, "body")?;
    let expire_at = match input
        .expire
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        Some(d) => {
            let end = coffer_domain::mail::parse_expire(d)?;
            if end < t || end > t + EXPIRE_MAX_DAYS * 86_400 {
                return Err(ApiError::field(ErrorCode::InputInvalidDate, "expire")
                    .with_message("The date is invalid (expire: from today to ten years ahead).")
                    .into());
            }
            end
        }
        None => {
            let days = super::int_setting(c, "requestFileDefaultExpireDays")?;
            // The end of the day `days` ahead.
            (t / 86_400 + days.max(0)) * 86_400 + 86_399
        }
    };
    let max = super::int_setting(c, "requestFileMaxCount")?;
    let count = match input.count {
        Some(n) => rules::check_count(n, max, count_field)?,
        None => super::int_setting(c, "requestFileDefaultCount")?.clamp(1, max.max(1)),
    };
    let action_id = input.action_id.unwrap_or(rules::ACTION_VIEW);
    if action_id != rules::ACTION_VIEW && action_id != rules::ACTION_DOWNLOAD {
        return Err(invalid("actionId", "1 (view) or 2 (view and download)").into());
    }
    let show = match input.show_token.unwrap_or(1) {
        0 => false,
        1 => true,
        _ => return Err(invalid("showToken", "0 or 1").into()),
    };
    if input.files.len() > rules::MAX_SOURCES {
        return Err(invalid("files", "at most 100 files").into());
    }
    Ok(Checked {
        recipients,
        subject,
        body,
        expire_at,
        count,
        action_id,
        show,
    })
}

/// Refuses requests while they are turned off (setting `requestFileEnabled`).
fn enabled(c: &mut DbConn) -> Result<()> {
    let raw = coffer_store::settings::get(c, "requestFileEnabled")?;
    if raw.as_deref() == Some("false") {
        return Err(ApiError::new(ErrorCode::SystemRequestFileDisabled).into());
    }
    Ok(())
}

/// The files offered with the links: each the requestor may download, live, scanned clean, and
/// not in a secure folder.
fn sources(c: &mut DbConn, caller: &str, ids: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let name = format!("files[{i}]");
        let (o, _) = require_file(c, caller, id, Action::Download).map_err(|e| named(e, &name))?;
        crate::content::live(&o)?;
        crate::content::not_secure(c, &o)?;
        let vid = o.current_version_id.clone().ok_or_else(super::not_found)?;
        let v = coffer_store::content::version(c, &vid)?.ok_or_else(super::not_found)?;
        crate::content::files::scanned(&v)?;
        if !out.contains(&o.id) {
            out.push(o.id);
        }
    }
    Ok(out)
}

/// Names the input field an error is about, when it names none.
fn named(e: Error, field: &str) -> Error {
    match e {
        Error::Api(mut a) if a.field.is_none() => {
            a.field = Some(field.to_string());
            a.into()
        }
        e => e,
    }
}

/// Where the links' files go.
enum Destination {
    Folder(String),
    /// The inbox of this mailbox (the caller's own, or a shared mailbox's).
    Inbox(String),
}

/// `POST /rest/folders/{id}/actions/requestFile`: one link per recipient; files arrive in the
/// folder. The folder must take uploads from the caller, be live, not a system folder and not
/// secure (403 `ERR_ENTITY_IS_SECURE_FOLDER`).
pub fn from_folder(
    ctx: &Ctx,
    caller: &Caller,
    folder_id: &str,
    input: &RequestInput,
) -> Result<Vec<RequestFileView>> {
    ctx.write(|c| {
        let t = now();
        enabled(c)?;
        let (f, _) =
            crate::content::require_folder(c, caller.user_id(), folder_id, Action::Upload)?;
        crate::content::live(&f)?;
        match f.system.as_deref() {
            Some("base") => return Err(ApiError::new(ErrorCode::EntityIsBaseDir).into()),
            Some("my") => return Err(ApiError::new(ErrorCode::EntityIsMyDir).into()),
            _ => {}
        }
        crate::content::not_secure(c, &f)?;
        let checked = check(c, input, "count", t)?;
        let offered = sources(c, caller.user_id(), &input.files)?;
        write(
            c,
            ctx,
            caller,
            Destination::Folder(f.id.clone()),
            &checked,
            input.require_auth.unwrap_or(false),
            &offered,
            t,
        )
    })
}

/// `POST /rest/mail/actions/requestFile`: one link per recipient; the files arrive as one email
/// in the caller's inbox, or in the shared mailbox's they are an active member of.
pub fn from_mail(ctx: &Ctx, caller: &Caller, input: &RequestInput) -> Result<Vec<RequestFileView>> {
    ctx.write(|c| {
        let t = now();
        enabled(c)?;
        let owner = crate::mail::mailbox(c, caller.user_id(), input.shared_mailbox_id.as_deref())?;
        let checked = check(c, input, "fileLimit", t)?;
        write(
            c,
            ctx,
            caller,
            Destination::Inbox(owner),
            &checked,
            input.require_auth.unwrap_or(false),
            &[],
            t,
        )
    })
}

/// Writes a checked request: its email, the links, the offered files and the link mail.
#[allow(clippy::too_many_arguments)]
fn write(
    c: &mut DbConn,
    ctx: &Ctx,
    caller: &Caller,
    to: Destination,
    checked: &Checked,
    require_auth: bool,
    offered: &[String],
    t: i64,
) -> Result<Vec<RequestFileView>> {
    let (kind, folder_id, requestor) = match to {
        Destination::Folder(f) => ("folder", Some(f), caller.user_id().to_string()),
        Destination::Inbox(owner) => ("inbox", None, owner),
    };
    let owner = coffer_store::users::by_id(c, &requestor)?.ok_or_else(super::not_found)?;
    let acl = if require_auth {
        "verify_recipient"
    } else {
        "no_auth"
    };
    let email = Email {
        id: uuid::Uuid::new_v4().to_string(),
        sender_id: requestor.clone(),
        actor_id: caller.user_id().to_string(),
        status: "queued".into(),
        kind: "requestFile".into(),
        subject: checked.subject.clone(),
        body: checked.body.clone(),
        acl: acl.into(),
        secure_body: false,
        self_copy: false,
        include_fingerprint: false,
        expire_at: Some(checked.expire_at),
        parent_email_id: None,
        web_form_id: None,
        web_form_fields: None,
        error: None,
        created_at: t,
        modified_at: t,
        sent_at: Some(t),
        withdrawn_at: None,
    };
    mail_store::insert(c, &email)?;
    let mut rows = Vec::with_capacity(checked.recipients.len());
    for (i, address) in checked.recipients.iter().enumerate() {
        let user = coffer_store::users::by_email(c, address)?.filter(|u| u.active && !u.deleted);
        rows.push(Recipient {
            email_id: email.id.clone(),
            position: i as i32,
            kind: 0,
            address: address.clone(),
            user_id: user.map(|u| u.id),
            ref_hash: None,
        });
    }
    mail_store::set_recipients(c, &email.id, &rows)?;
    mail_store::put_entries(
        c,
        &[Entry {
            user_id: requestor.clone(),
            email_id: email.id.clone(),
            role: "s".into(),
            bucket: "sent".into(),
            is_read: true,
            trashed_at: None,
            created_at: t,
            modified_at: t,
        }],
    )?;
    let domain = ctx.config.message_domain();
    let who = if owner.name.is_empty() || owner.name == owner.email {
        owner.email.clone()
    } else {
        format!("{} <{}>", owner.name, owner.email)
    };
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let reference = new_token();
        let id = coffer_store::request_files::insert(
            c,
            &NewRequestFile {
                ref_hash: hash_token(&reference),
                email_id: email.id.clone(),
                position: r.position,
                kind: kind.into(),
                requestor_id: requestor.clone(),
                actor_id: caller.user_id().to_string(),
                folder_id: folder_id.clone(),
                shared_mailbox_id: (requestor != caller.user_id()).then(|| requestor.clone()),
                recipient: r.address.clone(),
                recipient_user_id: r.user_id.clone(),
                file_limit: checked.count,
                require_auth,
                action_id: checked.action_id,
                expire_at: checked.expire_at,
                created_at: t,
            },
        )?;
        for f in offered {
            coffer_store::request_files::add_source(c, id, f)?;
        }
        let link = super::upload_link(ctx, &reference);
        let text = message(&who, checked, require_auth, &link);
        coffer_store::mail::queue(
            c,
            &coffer_store::mail::NewMessage {
                email_id: Some(&email.id),
                user_id: Some(&requestor),
                to: &r.address,
                subject: &checked.subject,
                body: &text,
                // The link works through its last second; mail not sent by then never is.
                expires_at: Some(checked.expire_at.saturating_add(1)),
            },
            &domain,
            t,
        )?;
        events::record(
            c,
            "requestfile.link.create",
            Some(caller.user_id()),
            json!({"id": id, "type": kind, "requestorId": requestor, "folderId": folder_id, "recipient": r.address, "emailId": email.id, "fileLimit": checked.count, "requireAuth": require_auth}),
        )?;
        let stored = coffer_store::request_files::by_id(c, id)?.ok_or_else(super::not_found)?;
        out.push(view(
            c,
            ctx,
            &stored,
            checked.show.then_some(reference.as_str()),
        )?);
    }
    crate::mail::contacts::touch_in(c, &requestor, &checked.recipients, t)?;
    Ok(out)
}

/// The mail that carries a link: who asks, the request's body as text, the link, how many files
/// and until when, and whether a code will be asked for.
fn message(who: &str, checked: &Checked, require_auth: bool, link: &str) -> String {
    let mut s = format!("{who} asks you to send files.\n\n");
    if !checked.body.is_empty() {
        s.push_str(&coffer_domain::mail::body_text(&checked.body));
        s.push_str("\n\n");
    }
    s.push_str(&format!("Send them here: {link}\n"));
    s.push_str(&format!(
        "The link takes up to {} file{} until the end of {} (UTC).\n",
        checked.count,
        if checked.count == 1 { "" } else { "s" },
        super::day(checked.expire_at)
    ));
    if require_auth {
        s.push_str("You will be asked for a code that is sent to this address.\n");
    }
    s
}

/// `DELETE /rest/requestFile/{ref}`: the one who made the link (or a member acting for the
/// mailbox it asks for) withdraws it; it takes nothing from then on and reads answer 403
/// `ERR_ENTITY_REQUEST_FILE_EXPIRED`. Anyone else: 403 `ERR_ACCESS_USER`.
pub fn withdraw(
    ctx: &Ctx,
    caller: &Caller,
    reference: &str,
    client_ip: Option<&str>,
) -> Result<()> {
    let v = Visitor {
        reference: reference.to_string(),
        user: Some((caller.user_id().to_string(), caller.user.email.clone())),
        session: None,
        client_ip: client_ip.map(str::to_string),
    };
    let (link, role) = super::admit(ctx, &v)?;
    if role != super::Role::Requestor {
        return Err(denied("only the one who asked may withdraw the link"));
    }
    ctx.write(|c| {
        let t = now();
        let link = super::fresh(c, link.id)?;
        if link.withdrawn_at.is_some() {
            return Err(ApiError::new(ErrorCode::EntityRequestFileExpired).into());
        }
        coffer_store::request_files::withdraw(c, link.id, t)?;
        events::record(
            c,
            "requestfile.link.delete",
            Some(caller.user_id()),
            json!({"id": link.id, "requestorId": link.requestor_id, "recipient": link.recipient}),
        )
    })
}
