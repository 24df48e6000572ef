//! Outside recipients of mail (docs/mail.md, "Outside recipients"): the link's reference
//! checked against its hash, the email's access level applied, the one-time code that proves the
//! address, the short web session it opens, and the decision to let an attachment go.
//!
//! Every refusal of a reference (unknown, malformed, or another email's) is the same
//! [`Refused::Invalid`] after the same work: one hash and one indexed lookup. Failures count on
//! the client address in the shared throttle table ([`crate::platform::throttle`]), so guessing
//! references or codes locks the address for a while on every node.

use super::{attachment_of, attachment_view, denied, not_found, views, AttachmentView, MailView};
use crate::content::files::Download;
use crate::platform::events;
use crate::platform::views::Listed;
use crate::{now, rfc3339, Ctx, Result};
use coffer_domain::mail::{self as rules, Acl};
use coffer_errors::{ApiError, ErrorCode};
use coffer_oauth::secrets::{hash_token, new_token, verify_token};
use coffer_store::emails::{self as emails, Email, Entry, Recipient};
use coffer_store::mail_access::{self as store, Code, Session};
use coffer_store::DbConn;
use rand::Rng;
use serde_json::json;

/// How long a code works.
pub const CODE_SECS: i64 = 600;
/// Attempts on one code; then it is void.
pub const MAX_ATTEMPTS: i32 = 5;
/// How long a session a code opened lasts.
pub const SESSION_SECS: i64 = 1800;
/// Codes one recipient may be sent within [`CODE_WINDOW_SECS`].
pub const CODES_PER_WINDOW: i32 = 5;
pub const CODE_WINDOW_SECS: i64 = 3600;

/// Why a recipient is turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The reference is unknown, malformed, or belongs to another email: one answer for all.
    Invalid,
    /// The email's links stopped working (`expire_at` passed).
    Expired,
    /// The sender withdrew the email.
    Withdrawn,
    /// `internal` mail: only signed-in users of the organisation read it.
    Internal,
    /// The address must be proved first (a code, then the session it opens).
    Unverified,
    /// Too many failures from this client address, or too many codes for this recipient:
    /// seconds to wait.
    Locked(i64),
}

/// An outcome a recipient sees, or why they are turned away.
pub type Access<T> = std::result::Result<T, Refused>;

/// What the access level asks of a recipient whose reference is good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// `no_auth`: the link alone opens it.
    Open,
    /// `verify_recipient` and `anyone_auth` (an outside recipient has no account to sign in
    /// with): a code sent to the address first.
    NeedsCode,
}

/// Decides by the email's state and level, once the reference is known good: withdrawn, then
/// expired (at `expire_at` itself the link still works), then the level.
pub fn gate(e: &Email, t: i64) -> Access<Gate> {
    if e.withdrawn_at.is_some() {
        return Err(Refused::Withdrawn);
    }
    if e.expire_at.is_some_and(|x| x < t) {
        return Err(Refused::Expired);
    }
    match Acl::parse(&e.acl) {
        Some(Acl::NoAuth) => Ok(Gate::Open),
        Some(Acl::VerifyRecipient) | Some(Acl::AnyoneAuth) => Ok(Gate::NeedsCode),
        Some(Acl::Internal) | None => Err(Refused::Internal),
    }
}

/// How an attempt at a code came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeCheck {
    Right,
    /// Wrong; this many attempts are left on the code (0: it is void now).
    Wrong(i32),
}

/// What a code's hash is taken of: the salt, then the code.
pub fn salted(salt: &str, code: &str) -> String {
    format!("{salt}:{code}")
}

/// Checks `given` against a stored code whose attempts already count this one; the hashes are
/// compared in constant time.
pub fn check_code(stored: &Code, given: &str) -> CodeCheck {
    let given: String = given.chars().filter(|c| !c.is_whitespace()).collect();
    if verify_token(&salted(&stored.code_salt, &given), &stored.code_hash) {
        CodeCheck::Right
    } else {
        CodeCheck::Wrong((MAX_ATTEMPTS - stored.attempts).max(0))
    }
}

/// A fresh 6-digit code.
pub fn new_code() -> String {
    format!("{:06}", rand::rngs::OsRng.gen_range(0..1_000_000u32))
}

/// The address with most of its local part hidden, for a page that says where a code went.
pub fn mask_address(address: &str) -> String {
    match address.split_once('@') {
        Some((local, domain)) => {
            let first: String = local.chars().take(1).collect();
            format!("{first}***@{domain}")
        }
        None => "***".into(),
    }
}

/// An attachment as the page lists it.
#[derive(Debug, Clone)]
pub struct Item {
    pub id: String,
    pub name: String,
    pub size: i64,
    pub mime: String,
    /// The sender withdrew it: listed so the recipient knows, never offered for download.
    pub withdrawn: bool,
}

/// The email as its outside recipient sees it. Before the address is proved only who sent it
/// and its subject are filled in.
#[derive(Debug, Clone)]
pub struct Message {
    pub email_id: String,
    /// The recipient's address.
    pub recipient: String,
    pub sender_name: String,
    pub sender_email: String,
    pub subject: String,
    /// When it was sent (RFC 3339).
    pub date: String,
    pub expire_at: Option<String>,
    /// Whether the content is shown (no_auth, or a live session of this recipient).
    pub verified: bool,
    /// The body as safe HTML ([`rules::body_html`]), once verified.
    pub body_html: Option<String>,
    /// The files, once verified.
    pub attachments: Vec<Item>,
}

/// The counter keys of this client address.
fn keys(client_ip: Option<&str>) -> Vec<String> {
    client_ip
        .filter(|i| !i.is_empty())
        .map(|ip| vec![format!("mail-ip:{ip}")])
        .unwrap_or_default()
}

fn locked(ctx: &Ctx, client_ip: Option<&str>) -> Result<Option<Refused>> {
    Ok(crate::platform::throttle::locked(ctx, &keys(client_ip))?.map(Refused::Locked))
}

/// Counts a failure on the client address, and answers it slowly past a few.
fn failed(ctx: &Ctx, client_ip: Option<&str>) -> Result<()> {
    let k = keys(client_ip);
    if !k.is_empty() {
        std::thread::sleep(crate::platform::throttle::failed(ctx, &k)?);
    }
    Ok(())
}

/// The recipient a reference belongs to, and the email, if the reference belongs to
/// `email_id`. One hash and one lookup whatever the reference is.
fn resolve(c: &mut DbConn, email_id: &str, reference: &str) -> Result<Access<(Email, Recipient)>> {
    let hash = hash_token(reference);
    let r = emails::recipient_by_ref(c, &hash)?;
    let Some(r) = r.filter(|r| r.email_id == email_id && r.user_id.is_none()) else {
        return Ok(Err(Refused::Invalid));
    };
    match emails::by_id(c, &r.email_id)? {
        Some(e) => Ok(Ok((e, r))),
        None => Ok(Err(Refused::Invalid)),
    }
}

/// Whether `token` is a live session of recipient `r`.
fn has_session(c: &mut DbConn, token: Option<&str>, r: &Recipient, t: i64) -> Result<bool> {
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return Ok(false);
    };
    Ok(store::session(c, &hash_token(token), t)?
        .is_some_and(|s| s.email_id == r.email_id && s.position == r.position))
}

/// Resolves and gates in one go: the email, its recipient, whether its content may be shown.
fn admit(
    c: &mut DbConn,
    email_id: &str,
    reference: &str,
    session: Option<&str>,
    t: i64,
) -> Result<Access<(Email, Recipient, bool)>> {
    let (e, r) = match resolve(c, email_id, reference)? {
        Ok(x) => x,
        Err(why) => return Ok(Err(why)),
    };
    let verified = match gate(&e, t) {
        Ok(Gate::Open) => true,
        Ok(Gate::NeedsCode) => has_session(c, session, &r, t)?,
        Err(why) => return Ok(Err(why)),
    };
    Ok(Ok((e, r, verified)))
}

/// Runs `f` after the address check, counting an invalid reference as a failure of the address.
fn guarded<T>(
    ctx: &Ctx,
    client_ip: Option<&str>,
    f: impl FnOnce() -> Result<Access<T>>,
) -> Result<Access<T>> {
    if let Some(l) = locked(ctx, client_ip)? {
        return Ok(Err(l));
    }
    let out = f()?;
    if out.as_ref().err() == Some(&Refused::Invalid) {
        failed(ctx, client_ip)?;
    }
    Ok(out)
}

/// `GET /mail/{id}?ref=…`: the email as its recipient may see it now.
pub fn open(
    ctx: &Ctx,
    email_id: &str,
    reference: &str,
    session: Option<&str>,
    client_ip: Option<&str>,
) -> Result<Access<Message>> {
    guarded(ctx, client_ip, || {
        ctx.read(|c| {
            let t = now();
            let (e, r, verified) = match admit(c, email_id, reference, session, t)? {
                Ok(x) => x,
                Err(why) => return Ok(Err(why)),
            };
            let sender = coffer_store::users::by_id(c, &e.sender_id)?;
            let attachments = if verified {
                emails::attachments(c, &e.id)?
                    .into_iter()
                    .map(|a| Item {
                        id: a.id,
                        name: a.name,
                        size: a.size,
                        mime: a.mime,
                        withdrawn: a.withdrawn,
                    })
                    .collect()
            } else {
                Vec::new()
            };
            Ok(Ok(Message {
                email_id: e.id.clone(),
                recipient: r.address.clone(),
                sender_name: sender.as_ref().map(|u| u.name.clone()).unwrap_or_default(),
                sender_email: sender.map(|u| u.email).unwrap_or_default(),
                subject: e.subject.clone(),
                date: rfc3339(e.sent_at.unwrap_or(e.modified_at)),
                expire_at: e.expire_at.map(rfc3339),
                verified,
                body_html: verified.then(|| rules::body_html(&e.body)),
                attachments,
            }))
        })
    })
}

/// What asking for a code came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeSent {
    /// Sent to this (masked) address.
    Sent(String),
    /// The email needs no code (the link alone opens it).
    NotNeeded,
}

/// `POST /mail/{id}/code`: mails a fresh code to the recipient (replacing an earlier one), at
/// most [`CODES_PER_WINDOW`] per recipient within [`CODE_WINDOW_SECS`].
pub fn send_code(
    ctx: &Ctx,
    email_id: &str,
    reference: &str,
    client_ip: Option<&str>,
) -> Result<Access<CodeSent>> {
    let domain = ctx.config.message_domain();
    guarded(ctx, client_ip, || {
        ctx.write(|c| {
            let t = now();
            let (e, r) = match resolve(c, email_id, reference)? {
                Ok(x) => x,
                Err(why) => return Ok(Err(why)),
            };
            match gate(&e, t) {
                Ok(Gate::Open) => return Ok(Ok(CodeSent::NotNeeded)),
                Ok(Gate::NeedsCode) => {}
                Err(why) => return Ok(Err(why)),
            }
            let key = format!("mail-code:{}:{}", r.email_id, r.position);
            if let Some(start) =
                coffer_store::throttle::spend(c, &key, CODES_PER_WINDOW, CODE_WINDOW_SECS, t)?
            {
                return Ok(Err(Refused::Locked((start + CODE_WINDOW_SECS - t).max(1))));
            }
            let code = new_code();
            let salt = new_token();
            store::replace_code(
                c,
                &Code {
                    email_id: r.email_id.clone(),
                    position: r.position,
                    code_hash: hash_token(&salted(&salt, &code)),
                    code_salt: salt,
                    attempts: 0,
                    created_at: t,
                    expire_at: t + CODE_SECS,
                },
            )?;
            let sender = coffer_store::users::by_id(c, &e.sender_id)?;
            let who = sender
                .map(|u| if u.name.is_empty() { u.email } else { u.name })
                .unwrap_or_default();
            let body = format!(
                "Your code to open the secure message from {who} is {code}.\n\n\
                 It works for {} minutes, once. If you did not ask for it, ignore this message.\n",
                CODE_SECS / 60
            );
            // The message expires with its code: not sent by then, it never is.
            coffer_store::mail::queue(
                c,
                &coffer_store::mail::NewMessage {
                    email_id: None,
                    user_id: None,
                    to: &r.address,
                    subject: "Your code for a secure message",
                    body: &body,
                    expires_at: Some(t + CODE_SECS),
                },
                &domain,
                t,
            )?;
            events::record(
                c,
                "mail.recipient.code",
                None,
                json!({"emailId": e.id, "userId": e.sender_id, "recipient": r.address}),
            )?;
            Ok(Ok(CodeSent::Sent(mask_address(&r.address))))
        })
    })
}

/// What entering a code came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    /// Right: a session opened; its token goes into the cookie (stored only hashed).
    Opened { session_token: String },
    /// Wrong: this many attempts are left (0: the code is void; ask for a new one).
    Wrong(i32),
    /// No live code: none was sent, it expired, or its attempts are used up.
    NoCode,
    /// The email needs no code.
    NotNeeded,
}

/// `POST /mail/{id}/verify`: checks a code; a right one opens a session of [`SESSION_SECS`]
/// bound to this recipient. Every attempt counts on the code, a wrong one also on the client
/// address.
pub fn verify_code(
    ctx: &Ctx,
    email_id: &str,
    reference: &str,
    code: &str,
    client_ip: Option<&str>,
) -> Result<Access<Verified>> {
    let out = guarded(ctx, client_ip, || {
        ctx.write(|c| {
            let t = now();
            let (e, r) = match resolve(c, email_id, reference)? {
                Ok(x) => x,
                Err(why) => return Ok(Err(why)),
            };
            match gate(&e, t) {
                Ok(Gate::Open) => return Ok(Ok(Verified::NotNeeded)),
                Ok(Gate::NeedsCode) => {}
                Err(why) => return Ok(Err(why)),
            }
            let Some(stored) = store::attempt(c, &r.email_id, r.position, t, MAX_ATTEMPTS)? else {
                return Ok(Ok(Verified::NoCode));
            };
            match check_code(&stored, code) {
                CodeCheck::Right => {
                    store::delete_code(c, &r.email_id, r.position)?;
                    store::delete_expired_sessions(c, t)?;
                    let token = new_token();
                    store::insert_session(
                        c,
                        &Session {
                            token_hash: hash_token(&token),
                            email_id: r.email_id.clone(),
                            position: r.position,
                            created_at: t,
                            expire_at: t + SESSION_SECS,
                        },
                    )?;
                    events::record(
                        c,
                        "mail.recipient.verify",
                        None,
                        json!({"emailId": e.id, "userId": e.sender_id, "recipient": r.address}),
                    )?;
                    Ok(Ok(Verified::Opened {
                        session_token: token,
                    }))
                }
                CodeCheck::Wrong(left) => {
                    if left == 0 {
                        store::delete_code(c, &r.email_id, r.position)?;
                    }
                    events::record(
                        c,
                        "mail.recipient.reject",
                        None,
                        json!({"emailId": e.id, "userId": e.sender_id, "recipient": r.address, "attemptsLeft": left}),
                    )?;
                    Ok(Ok(Verified::Wrong(left)))
                }
            }
        })
    })?;
    if matches!(out, Ok(Verified::Wrong(_)) | Ok(Verified::NoCode)) {
        failed(ctx, client_ip)?;
    }
    Ok(out)
}

/// `GET /mail/{id}/attachments/{aid}/content?ref=…`: the download, once the recipient may see
/// the content (the same checks as a signed-in recipient's: not expired, not withdrawn, the
/// attachment not withdrawn, its version scanned clean), with the recipient's address for the
/// event.
pub fn download(
    ctx: &Ctx,
    email_id: &str,
    attachment_id: &str,
    reference: &str,
    session: Option<&str>,
    client_ip: Option<&str>,
) -> Result<Access<(Download, String)>> {
    guarded(ctx, client_ip, || {
        ctx.read(|c| {
            let (e, r, verified) = match admit(c, email_id, reference, session, now())? {
                Ok(x) => x,
                Err(why) => return Ok(Err(why)),
            };
            if !verified {
                return Ok(Err(Refused::Unverified));
            }
            let d = attachment_of(c, &e, attachment_id)?;
            Ok(Ok((d, r.address)))
        })
    })
}

/// The capability reads of `/rest` (no bearer token): the email a reference opens, for
/// `no_auth` mail only; anything else is refused as an unknown reference would be.
pub fn by_reference(
    ctx: &Ctx,
    email_id: &str,
    reference: &str,
    client_ip: Option<&str>,
) -> Result<Access<(Email, Recipient)>> {
    guarded(ctx, client_ip, || {
        ctx.read(|c| {
            let (e, r) = match resolve(c, email_id, reference)? {
                Ok(x) => x,
                Err(why) => return Ok(Err(why)),
            };
            match gate(&e, now()) {
                Ok(Gate::Open) => Ok(Ok((e, r))),
                Ok(Gate::NeedsCode) => Ok(Err(Refused::Unverified)),
                Err(why) => Ok(Err(why)),
            }
        })
    })
}

/// The email a link's reference opens through the capability reads of `/rest` (no bearer
/// token; `no_auth` mail only, docs/mail.md). A reference that is bad, or of mail that asks for
/// more than the link, is 404 like an unknown email; expired or withdrawn mail is 403
/// `ERR_ACCESS_USER` as for a signed-in recipient; too many failures from the address, 429.
fn opened(
    ctx: &Ctx,
    id: &str,
    reference: &str,
    client_ip: Option<&str>,
) -> Result<(Email, Recipient)> {
    match by_reference(ctx, id, reference, client_ip)? {
        Ok(x) => Ok(x),
        Err(Refused::Expired) => Err(denied("the email has expired")),
        Err(Refused::Withdrawn) => Err(denied("the email was withdrawn")),
        Err(Refused::Locked(wait)) => Err(ApiError::new(ErrorCode::RequestRateLimited)
            .with_retry_after(wait.max(1))
            .into()),
        Err(Refused::Invalid | Refused::Internal | Refused::Unverified) => Err(not_found()),
    }
}

/// `GET /rest/mail/{id}?ref=…` without a bearer token: the email as its outside recipient sees
/// it (no recipients list).
pub fn get_by_reference(
    ctx: &Ctx,
    id: &str,
    reference: &str,
    client_ip: Option<&str>,
) -> Result<MailView> {
    let (e, r) = opened(ctx, id, reference, client_ip)?;
    ctx.read(|c| {
        let t = e.sent_at.unwrap_or(e.modified_at);
        let entry = Entry {
            user_id: String::new(),
            email_id: e.id.clone(),
            role: "r".into(),
            bucket: "inbox".into(),
            is_read: true,
            trashed_at: None,
            created_at: t,
            modified_at: t,
        };
        let mut v = views(c, &[(entry, e)], false, &r.address)?;
        v.pop().ok_or_else(not_found)
    })
}

/// `GET /rest/mail/{id}/attachments?ref=…` without a bearer token.
pub fn attachments_by_reference(
    ctx: &Ctx,
    id: &str,
    reference: &str,
    client_ip: Option<&str>,
    offset: i64,
    limit: i64,
) -> Result<Listed<AttachmentView>> {
    let (e, _) = opened(ctx, id, reference, client_ip)?;
    ctx.read(|c| {
        let all = emails::attachments(c, &e.id)?;
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
            total: all.len() as i64,
            offset,
            limit,
        })
    })
}

/// `GET /rest/mail/{id}/attachments/{aid}/content?ref=…` without a bearer token: the download
/// and the recipient's address (for the event).
pub fn attachment_download_by_reference(
    ctx: &Ctx,
    id: &str,
    attachment_id: &str,
    reference: &str,
    client_ip: Option<&str>,
) -> Result<(Download, String)> {
    let (e, r) = opened(ctx, id, reference, client_ip)?;
    ctx.read(|c| Ok((attachment_of(c, &e, attachment_id)?, r.address)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn email(acl: &str) -> Email {
        Email {
            id: "e".into(),
            sender_id: "s".into(),
            actor_id: "s".into(),
            status: "sent".into(),
            kind: "original".into(),
            subject: "Q3".into(),
            body: "b".into(),
            acl: acl.into(),
            secure_body: false,
            self_copy: false,
            include_fingerprint: false,
            expire_at: None,
            parent_email_id: None,
            web_form_id: None,
            web_form_fields: None,
            error: None,
            created_at: 0,
            modified_at: 0,
            sent_at: Some(0),
            withdrawn_at: None,
        }
    }

    #[test]
    fn the_level_decides_what_a_good_reference_opens() {
        assert_eq!(gate(&email("no_auth"), 10), Ok(Gate::Open));
        assert_eq!(gate(&email("verify_recipient"), 10), Ok(Gate::NeedsCode));
        assert_eq!(gate(&email("anyone_auth"), 10), Ok(Gate::NeedsCode));
        assert_eq!(gate(&email("internal"), 10), Err(Refused::Internal));
        assert_eq!(gate(&email("bogus"), 10), Err(Refused::Internal));
    }

    #[test]
    fn expiry_counts_from_the_second_after_and_withdrawal_wins() {
        let mut e = email("no_auth");
        e.expire_at = Some(100);
        assert_eq!(gate(&e, 100), Ok(Gate::Open));
        assert_eq!(gate(&e, 101), Err(Refused::Expired));
        e.withdrawn_at = Some(50);
        assert_eq!(gate(&e, 101), Err(Refused::Withdrawn));
        assert_eq!(gate(&e, 10), Err(Refused::Withdrawn));
    }

    #[test]
    fn a_code_is_checked_against_its_salted_hash() {
        let code = new_code();
        assert_eq!(code.len(), 6);
        assert!(code.chars().all(|c| c.is_ascii_digit()));
        let salt = "salt".to_string();
        let mut stored = Code {
            email_id: "e".into(),
            position: 0,
            code_hash: hash_token(&salted(&salt, &code)),
            code_salt: salt,
            attempts: 1,
            created_at: 0,
            expire_at: 600,
        };
        assert_ne!(stored.code_hash, hash_token(&code), "salted");
        assert_eq!(check_code(&stored, &code), CodeCheck::Right);
        assert_eq!(
            check_code(&stored, &format!(" {} {}", &code[..3], &code[3..])),
            CodeCheck::Right
        );
        let wrong = if code == "000000" { "000001" } else { "000000" };
        assert_eq!(check_code(&stored, wrong), CodeCheck::Wrong(4));
        stored.attempts = MAX_ATTEMPTS;
        assert_eq!(check_code(&stored, wrong), CodeCheck::Wrong(0));
        assert_eq!(check_code(&stored, ""), CodeCheck::Wrong(0));
    }

    #[test]
    fn a_masked_address_keeps_its_first_letter_and_domain() {
        assert_eq!(mask_address("out@partner.example"), "o***@partner.example");
        assert_eq!(mask_address("nobody"), "***");
    }
}
