//! Request-file links (docs/request-files.md): a user asks someone for files; each recipient
//! gets a link of their own, by mail, and sends files through it into the requestor's folder
//! (`create::from_folder`) or as an email into the requestor's inbox (`create::from_mail`).
//!
//! This file holds what the operations share: the records they answer, who may use a link
//! ([`admit`]: the reference checked against its hash, failures counted on the client address,
//! `requireAuth` decided), its state (active, exhausted, expired), and what an upload through a
//! link does once its file is stored ([`TARGET`], the content core's upload-completion seam).
//! The requestor's side is `create`, the recipient's `recipient`, the one-time code that proves
//! a recipient's address `access`, and what the recipient's HTML page needs `page`.
//!
//! A link's reference is 32 random bytes, kept only as its SHA-256; the lookup is by that hash
//! and the stored hash is compared again in constant time. An outside recipient of a
//! `requireAuth` link proves the address as outside recipients of mail do: the request is an
//! email whose recipient rows the links point at, so the codes and sessions of mail serve them.

pub mod access;
pub mod create;
pub mod page;
pub mod recipient;

use crate::content::files::{Download, Stored, Target};
use crate::content::uploads::TargetKind;
use crate::platform::{events, throttle};
use crate::{now, Ctx, Result};
use coffer_domain::request_file as rules;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_oauth::secrets::{hash_token, verify_token};
use coffer_store::emails::{self as mail_store, Email};
use coffer_store::models::{Object, RequestFile};
use coffer_store::DbConn;
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

/// The prefix of the upload targets of request-file links (`rf:<link id>`).
pub const TARGET_PREFIX: &str = "rf:";

/// What the content core does with a finished chunked upload through a link: `cofferd serve`
/// adds it to [`crate::Ctx::upload_completion`].
pub const TARGET: TargetKind = TargetKind {
    prefix: TARGET_PREFIX,
    complete: complete_upload,
    actor: uploader,
};

/// The cookie that carries the session a code opened (`access`), on the recipient's page and
/// the calls it makes.
pub const SESSION_COOKIE: &str = "coffer_rf_session";

/// A user as a link names them (`UserBasic`); an outside recipient has no `id`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserBasic {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub email: String,
}

/// The request email a link belongs to.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestMailView {
    pub id: String,
    pub subject: String,
    pub body: String,
    /// The body as safe HTML.
    pub full_html_body: String,
    pub sender_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_mailbox_id: Option<String>,
}

/// `config` of a link.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestFileConfig {
    pub excluded_file_extensions: Vec<String>,
}

/// A request-file link (`RequestFile`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestFileView {
    pub id: i64,
    /// `folder` (files land in a folder) or `inbox` (they arrive as an email).
    #[serde(rename = "type")]
    pub kind: String,
    pub requestor: UserBasic,
    pub recipient: UserBasic,
    /// Files the link still takes (0: exhausted).
    pub remaining: i64,
    pub file_limit: i64,
    pub email: RequestMailView,
    /// The body of the request.
    pub message: String,
    pub require_auth: bool,
    /// The last day the link works (`YYYY-MM-DD`, UTC).
    pub expire: String,
    pub excluded_file_extensions: Vec<String>,
    pub config: RequestFileConfig,
    /// The recipient's page. Left out when the reference is not shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upload_link: Option<String>,
    /// The reference. Left out when the request said `showToken: 0`.
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// What the recipient may do with an offered file.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PermissionView {
    /// `view` or `download`.
    pub name: String,
    pub enabled: bool,
}

/// A file the requestor offers with a link (`RequestFileSource`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestFileSourceView {
    pub file_id: String,
    pub request_file_id: i64,
    /// 1 view only, 2 view and download.
    pub action_id: i64,
    pub permissions: Vec<PermissionView>,
}

/// A file that arrived through a link (`RequestFileUpload`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestFileUploadView {
    pub file_id: String,
    pub request_file_id: i64,
    /// The name the recipient gave.
    pub name: String,
    pub created: String,
}

/// Who uses a link: its reference, and what else the request carries.
#[derive(Debug, Clone, Default)]
pub struct Visitor {
    pub reference: String,
    /// A signed-in caller (bearer token): id and address.
    pub user: Option<(String, String)>,
    /// The session a one-time code opened (`access`).
    pub session: Option<String>,
    pub client_ip: Option<String>,
}

/// Who a visitor is to a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The recipient (or, without `requireAuth`, anyone holding the reference).
    Recipient,
    /// The user who made the link (or the mailbox it asks for).
    Requestor,
}

pub(crate) fn denied(why: &str) -> Error {
    ApiError::new(ErrorCode::AccessUser)
        .with_message(format!("Insufficient access permissions ({why})."))
        .into()
}

pub(crate) fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

/// Every refusal of a reference: unknown, malformed, another's. One answer for all.
fn unknown() -> Error {
    denied("the link is not known")
}

/// The counter keys of the client address.
fn keys(client_ip: Option<&str>) -> Vec<String> {
    client_ip
        .filter(|i| !i.is_empty())
        .map(|ip| vec![format!("rf-ip:{ip}")])
        .unwrap_or_default()
}

/// The link a reference opens: one hash and one indexed lookup whatever the reference is, the
/// stored hash compared in constant time.
fn lookup(c: &mut DbConn, reference: &str) -> Result<Option<RequestFile>> {
    let shaped = rules::is_reference(reference);
    // A malformed reference is hashed and looked up like any other, so that it takes as long.
    let hash = hash_token(reference);
    let found = coffer_store::request_files::by_ref_hash(c, &hash)?;
    Ok(found.filter(|l| shaped && verify_token(reference, &l.ref_hash)))
}

/// Whether `token` is a live code session of the link's recipient.
fn has_session(c: &mut DbConn, token: Option<&str>, link: &RequestFile, t: i64) -> Result<bool> {
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return Ok(false);
    };
    Ok(
        coffer_store::mail_access::session(c, &hash_token(token), t)?
            .is_some_and(|s| s.email_id == link.email_id && s.position == link.position),
    )
}

/// Who the visitor is to the link: the requestor (signed in as the one who made it, or as the
/// mailbox it asks for), or its recipient. A `requireAuth` link wants the recipient signed in
/// with the address, or holding a session a code opened: 401 `ERR_AUTH_REQUEST_FILE` without
/// either, 403 `ERR_ACCESS_USER` for someone else.
fn role(c: &mut DbConn, link: &RequestFile, v: &Visitor, t: i64) -> Result<Role> {
    if let Some((id, email)) = &v.user {
        if *id == link.actor_id || *id == link.requestor_id {
            return Ok(Role::Requestor);
        }
        if email.eq_ignore_ascii_case(&link.recipient) || !link.require_auth {
            return Ok(Role::Recipient);
        }
        if has_session(c, v.session.as_deref(), link, t)? {
            return Ok(Role::Recipient);
        }
        // `field` tells the recipient's page this case from an unknown reference.
        return Err(ApiError::field(ErrorCode::AccessUser, "recipient")
            .with_message("Insufficient access permissions (the link is for another recipient).")
            .into());
    }
    if !link.require_auth || has_session(c, v.session.as_deref(), link, t)? {
        return Ok(Role::Recipient);
    }
    Err(ApiError::new(ErrorCode::AuthRequestFile).into())
}

/// The link the visitor's reference opens and who they are to it, before any state is looked
/// at. Too many unknown references from the client address lock it for a while (429
/// `ERR_REQUEST_RATE_LIMITED`); each unknown one counts and is answered more slowly.
pub fn admit(ctx: &Ctx, v: &Visitor) -> Result<(RequestFile, Role)> {
    let k = keys(v.client_ip.as_deref());
    if let Some(wait) = throttle::locked(ctx, &k)? {
        return Err(ApiError::new(ErrorCode::RequestRateLimited)
            .with_retry_after(wait.max(1))
            .into());
    }
    let found = ctx.read(|c| lookup(c, &v.reference))?;
    let Some(link) = found else {
        if !k.is_empty() {
            std::thread::sleep(throttle::failed(ctx, &k)?);
        }
        return Err(unknown());
    };
    let role = ctx.read(|c| role(c, &link, v, now()))?;
    Ok((link, role))
}

/// The link as it stands now, in the caller's transaction.
fn fresh(c: &mut DbConn, id: i64) -> Result<RequestFile> {
    coffer_store::request_files::by_id(c, id)?.ok_or_else(unknown)
}

/// Refuses a link that stopped working: withdrawn or past its last day (403
/// `ERR_ENTITY_REQUEST_FILE_EXPIRED`), or whose folder is in the trash or gone (403
/// `ERR_ENTITY_DELETED`). An exhausted link is still open: it is read, it takes no file.
fn check_open(c: &mut DbConn, link: &RequestFile, t: i64) -> Result<()> {
    if link.withdrawn_at.is_some() {
        // The same code as an expired link; `field` tells a program (and the recipient's page)
        // which, the message tells a person.
        return Err(
            ApiError::field(ErrorCode::EntityRequestFileExpired, "withdrawn")
                .with_message("The request file link was withdrawn by its requestor.")
                .into(),
        );
    }
    if link.expire_at < t {
        let code = ErrorCode::EntityRequestFileExpired;
        return Err(ApiError::field(code, "expire")
            .with_message(code.message())
            .into());
    }
    if link.kind == "folder" {
        let folder = match &link.folder_id {
            Some(f) => coffer_store::content::object(c, f)?,
            None => None,
        };
        if folder.is_none_or(|f| f.deleted_at.is_some() || f.perm_deleted) {
            return Err(ApiError::new(ErrorCode::EntityDeleted).into());
        }
    }
    Ok(())
}

/// Files the link still takes.
fn remaining(c: &mut DbConn, link: &RequestFile) -> Result<i64> {
    let used = coffer_store::request_files::uploads(c, link.id)?.len() as i64;
    Ok((link.file_limit - used).max(0))
}

/// Refuses another file: the link is closed, exhausted, or (a link to an inbox) its files went
/// out already (403 `ERR_ENTITY_REQUEST_FILE_UPLOAD_LIMIT_REACHED`).
fn check_takes_file(c: &mut DbConn, link: &RequestFile, t: i64) -> Result<()> {
    check_open(c, link, t)?;
    if link.reply_email_id.is_some() && link.kind == "inbox" {
        return Err(
            ApiError::new(ErrorCode::EntityRequestFileUploadLimitReached)
                .with_message("The files of this link were sent already; it takes no more.")
                .into(),
        );
    }
    if remaining(c, link)? == 0 {
        return Err(ApiError::new(ErrorCode::EntityRequestFileUploadLimitReached).into());
    }
    Ok(())
}

/// The extensions links refuse (setting `requestFileExcludedExtensions`).
fn excluded_extensions(c: &mut DbConn) -> Result<Vec<String>> {
    let raw = coffer_store::settings::get(c, "requestFileExcludedExtensions")?;
    Ok(rules::parse_extensions(raw.as_deref().unwrap_or("")))
}

/// An integer request-file setting with its default.
fn int_setting(c: &mut DbConn, key: &str) -> Result<i64> {
    let default = crate::identity::settings::REQUEST_FILE_DEFAULTS
        .iter()
        .find(|(k, _)| *k == key)
        .map_or(0, |(_, v)| *v);
    crate::content::int_setting(c, key, default)
}

/// The day of a time, `YYYY-MM-DD` (UTC).
fn day(ts: i64) -> String {
    crate::rfc3339(ts).chars().take(10).collect()
}

/// The recipient's page of a reference.
pub fn upload_link(ctx: &Ctx, reference: &str) -> String {
    format!("{}/requestFile/{reference}", ctx.config.base_url)
}

/// A link as its record shows it; `reference` only when it may be shown.
fn view(
    c: &mut DbConn,
    ctx: &Ctx,
    link: &RequestFile,
    reference: Option<&str>,
) -> Result<RequestFileView> {
    let email = mail_store::by_id(c, &link.email_id)?
        .ok_or_else(|| Error::internal("a request-file link without its email"))?;
    let requestor = coffer_store::users::by_id(c, &link.requestor_id)?;
    let excluded = excluded_extensions(c)?;
    let shared = coffer_store::shared_mailboxes::is_shared_mailbox(c, &link.requestor_id)?;
    Ok(RequestFileView {
        id: link.id,
        kind: link.kind.clone(),
        requestor: UserBasic {
            id: Some(link.requestor_id.clone()),
            email: requestor.map(|u| u.email).unwrap_or_default(),
        },
        recipient: UserBasic {
            id: link.recipient_user_id.clone(),
            email: link.recipient.clone(),
        },
        remaining: remaining(c, link)?,
        file_limit: link.file_limit,
        email: RequestMailView {
            id: email.id.clone(),
            subject: email.subject.clone(),
            body: email.body.clone(),
            full_html_body: coffer_domain::mail::body_html(&email.body),
            sender_id: email.sender_id.clone(),
            shared_mailbox_id: shared.then(|| link.requestor_id.clone()),
        },
        message: email.body,
        require_auth: link.require_auth,
        expire: day(link.expire_at),
        excluded_file_extensions: excluded.clone(),
        config: RequestFileConfig {
            excluded_file_extensions: excluded,
        },
        upload_link: reference.map(|r| upload_link(ctx, r)),
        reference: reference.map(str::to_string),
    })
}

/// Where a link's files are stored: its folder, or the requestor's system folder for mail.
fn destination(c: &mut DbConn, link: &RequestFile) -> Result<String> {
    match (&link.kind[..], &link.folder_id) {
        ("folder", Some(f)) => Ok(f.clone()),
        ("folder", None) => Err(ApiError::new(ErrorCode::EntityDeleted).into()),
        _ => Ok(coffer_store::users::by_id(c, &link.requestor_id)?
            .ok_or_else(|| Error::internal("a request-file link without its requestor"))?
            .mydir_id),
    }
}

/// Checks a name the recipient gives a file and answers where it goes: the link must take a
/// file, the extension must not be refused, and the name carries the recipient's address.
fn plan(c: &mut DbConn, link: &RequestFile, filename: &str, t: i64) -> Result<Target> {
    check_takes_file(c, link, t)?;
    if filename.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "filename").into());
    }
    coffer_domain::content::validate_name(filename)?;
    rules::check_extension(filename, &excluded_extensions(c)?)?;
    let name = rules::stored_name(filename, &link.recipient);
    coffer_domain::content::validate_name(&name)?;
    Ok(Target::Folder {
        folder_id: destination(c, link)?,
        name,
        disable_auto_version: false,
    })
}

/// The link a target names (`rf:<id>`).
fn target_link(c: &mut DbConn, target: &str) -> Result<RequestFile> {
    let id = target
        .strip_prefix(TARGET_PREFIX)
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| Error::internal("a request-file target without a link id"))?;
    fresh(c, id)
}

/// Who an upload through a link is from: the recipient's account, or nobody with one. The
/// events of the file name them, so that the requestor's folder notifications tell of it.
fn uploader(c: &mut DbConn, target: &str) -> Result<Option<String>> {
    Ok(target_link(c, target)?.recipient_user_id)
}

/// Records a file stored through a link, in the transaction that stored it: the link must still
/// take it (else the whole upload fails and nothing is kept). A link to an inbox whose last
/// allowed file this was sends its files on at once.
fn complete_upload(c: &mut DbConn, target: &str, file: &Object) -> Result<()> {
    let link = target_link(c, target)?;
    let t = now();
    check_takes_file(c, &link, t)?;
    let version = file.current_version_id.clone().ok_or_else(not_found)?;
    let name = rules::given_name(&file.name, &link.recipient);
    coffer_store::request_files::add_upload(c, link.id, &file.id, &version, &name, t)?;
    events::record(
        c,
        "requestfile.file.upload",
        link.recipient_user_id.as_deref(),
        json!({"id": link.id, "fileId": file.id, "versionId": version, "requestorId": link.requestor_id, "recipient": link.recipient}),
    )?;
    if link.kind == "inbox" && remaining(c, &link)? == 0 {
        deliver(c, &link, None, t)?;
    }
    Ok(())
}

/// Stores a one-shot upload's file through a link and records it (one transaction).
fn commit_upload(
    c: &mut DbConn,
    ctx: &Ctx,
    link: &RequestFile,
    target: &Target,
    stored: &Stored,
) -> Result<Object> {
    let file = crate::content::files::commit_by(
        c,
        ctx,
        &link.requestor_id,
        link.recipient_user_id.as_deref(),
        target,
        stored,
    )?;
    complete_upload(c, &format!("{TARGET_PREFIX}{}", link.id), &file)?;
    coffer_store::content::object(c, &file.id)?.ok_or_else(not_found)
}

/// The email that tells the requestor the files arrived, into their (or the shared mailbox's)
/// inbox: from the recipient's account, or from the requestor's own for an outside recipient. A
/// link to an inbox carries its files as attachments and takes no more afterwards.
fn deliver(c: &mut DbConn, link: &RequestFile, body: Option<&str>, t: i64) -> Result<String> {
    let uploads = coffer_store::request_files::uploads(c, link.id)?;
    if uploads.is_empty() {
        return Err(ApiError::new(ErrorCode::EntityRequestFileNoFileUploaded).into());
    }
    let request = mail_store::by_id(c, &link.email_id)?
        .ok_or_else(|| Error::internal("a request-file link without its email"))?;
    let owner = coffer_store::users::by_id(c, &link.requestor_id)?
        .ok_or_else(|| Error::internal("a request-file link without its requestor"))?;
    let sender = link
        .recipient_user_id
        .clone()
        .unwrap_or_else(|| owner.id.clone());
    let mut names: Vec<String> = Vec::new();
    for u in &uploads {
        if !names.contains(&u.name) {
            names.push(u.name.clone());
        }
    }
    let text = match body.map(str::trim).filter(|b| !b.is_empty()) {
        Some(b) => b.to_string(),
        None => format!(
            "{} sent {} through your request:\n{}",
            link.recipient,
            if names.len() == 1 { "a file" } else { "files" },
            names
                .iter()
                .map(|n| format!("- {}", coffer_domain::mail::escape(n)))
                .collect::<Vec<_>>()
                .join("\n")
        ),
    };
    let email = Email {
        id: uuid::Uuid::new_v4().to_string(),
        sender_id: sender.clone(),
        actor_id: sender.clone(),
        status: "sent".into(),
        kind: "reply".into(),
        subject: format!("Re: {}", request.subject),
        body: text,
        acl: crate::mail::DEFAULT_ACL.as_str().into(),
        secure_body: false,
        self_copy: false,
        include_fingerprint: false,
        expire_at: None,
        parent_email_id: Some(request.id.clone()),
        web_form_id: None,
        web_form_fields: None,
        error: None,
        created_at: t,
        modified_at: t,
        sent_at: Some(t),
        withdrawn_at: None,
    };
    mail_store::insert(c, &email)?;
    let mut attached = 0;
    if link.kind == "inbox" {
        let mut seen: Vec<String> = Vec::new();
        for u in &uploads {
            if seen.contains(&u.file_id) {
                continue;
            }
            seen.push(u.file_id.clone());
            if let Some(f) = coffer_store::content::object(c, &u.file_id)?
                .filter(|f| f.deleted_at.is_none() && !f.perm_deleted)
            {
                crate::mail::attach(c, &email, &f, t)?;
                attached += 1;
            }
        }
        if !coffer_store::request_files::set_reply(c, link.id, &email.id)? {
            return Err(
                ApiError::new(ErrorCode::EntityRequestFileUploadLimitReached)
                    .with_message("The files of this link were sent already.")
                    .into(),
            );
        }
    }
    crate::mail::deliver_to_owner(c, &email, &owner, &sender, t)?;
    events::record(
        c,
        "requestfile.link.reply",
        link.recipient_user_id.as_deref(),
        json!({"id": link.id, "emailId": email.id, "requestorId": owner.id, "recipient": link.recipient, "attachments": attached}),
    )?;
    events::record(
        c,
        "mail.email.send",
        link.recipient_user_id.as_deref(),
        json!({"id": email.id, "senderId": email.sender_id, "status": "sent", "recipients": 1, "attachments": attached, "requestFileId": link.id}),
    )?;
    Ok(email.id)
}

/// A file of the link's (`object_id` among its offered files, or among what arrived through it
/// when `uploads`), live.
fn file_of(c: &mut DbConn, link: &RequestFile, object_id: &str, uploads: bool) -> Result<Object> {
    let listed = if uploads {
        coffer_store::request_files::uploads(c, link.id)?
            .iter()
            .any(|u| u.file_id == object_id)
    } else {
        coffer_store::request_files::sources(c, link.id)?
            .iter()
            .any(|f| f == object_id)
    };
    if !listed {
        return Err(not_found());
    }
    let o = coffer_store::content::object(c, object_id)?.ok_or_else(not_found)?;
    crate::content::live(&o)?;
    Ok(o)
}

/// What a download of one of the link's files serves: its current version, scanned clean.
fn download_of(c: &mut DbConn, o: &Object, name: &str) -> Result<Download> {
    let vid = o.current_version_id.clone().ok_or_else(not_found)?;
    let v = coffer_store::content::version(c, &vid)?.ok_or_else(not_found)?;
    crate::content::files::scanned(&v)?;
    Ok(Download {
        file_id: o.id.clone(),
        version_id: v.id.clone(),
        name: name.to_string(),
        mime: v.mime.clone(),
        size: v.size,
        blob: v.blob_id.clone(),
        owner_id: o.owner_id.clone(),
        preview: false,
    })
}

/// Records that a file was served through a link (`requestfile.file.download`).
pub async fn record_download(ctx: &Ctx, link_id: i64, d: &Download) -> Result<()> {
    let data = json!({"id": link_id, "fileId": d.file_id, "versionId": d.version_id, "ownerId": d.owner_id});
    ctx.write_owned(move |c| {
        let link = fresh(c, link_id)?;
        let mut data = data;
        data["recipient"] = json!(link.recipient);
        events::record(
            c,
            "requestfile.file.download",
            link.recipient_user_id.as_deref(),
            data,
        )
    })
    .await
}
