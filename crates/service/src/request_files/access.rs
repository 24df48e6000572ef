//! How the recipient of a `requireAuth` link proves the address without an account: a one-time
//! code mailed to it (`POST /rest/requestFile/{ref}/actions/sendCode`), which, entered
//! (`…/actions/verifyCode`), opens a short session bound to that recipient. The codes and
//! sessions are those of outside mail recipients (`crate::mail::access`): the same lifetimes,
//! attempts, salted hashes and limits, kept against the request email's recipient row.

use super::{admit, check_open, fresh, Visitor};
use crate::mail::access::{
    check_code, mask_address, new_code, salted, CodeCheck, CODES_PER_WINDOW, CODE_SECS,
    CODE_WINDOW_SECS, MAX_ATTEMPTS, SESSION_SECS,
};
use crate::platform::{events, throttle};
use crate::{now, Ctx, Result};
use coffer_errors::{ApiError, ErrorCode};
use coffer_oauth::secrets::{hash_token, new_token};
use coffer_store::mail_access::{self as store, Code, Session};
use serde_json::json;

/// A link that needs no code: the call is out of place.
fn not_needed() -> crate::Error {
    ApiError::field(ErrorCode::InvalidParameter, "ref")
        .with_message("The parameter is invalid (ref: this link needs no code).")
        .into()
}

/// Mails a fresh code to the link's recipient (replacing an earlier one), at most
/// `CODES_PER_WINDOW` within `CODE_WINDOW_SECS` (then 429 `ERR_REQUEST_RATE_LIMITED`). Answers
/// the address, masked.
pub fn send_code(ctx: &Ctx, v: &Visitor) -> Result<String> {
    // Whoever holds the reference may ask; the code goes to the recipient's address only.
    let anyone = Visitor {
        user: None,
        session: None,
        ..v.clone()
    };
    let link = match admit(ctx, &anyone) {
        Ok((link, _)) => link,
        Err(e) if e.to_api().code == ErrorCode::AuthRequestFile => {
            let found = ctx.read(|c| super::lookup(c, &v.reference))?;
            found.ok_or_else(super::unknown)?
        }
        Err(e) => return Err(e),
    };
    if !link.require_auth {
        return Err(not_needed());
    }
    let domain = ctx.config.message_domain();
    ctx.write(|c| {
        let t = now();
        let link = fresh(c, link.id)?;
        check_open(c, &link, t)?;
        let key = format!("rf-code:{}", link.id);
        if let Some(start) =
            coffer_store::throttle::spend(c, &key, CODES_PER_WINDOW, CODE_WINDOW_SECS, t)?
        {
            return Err(ApiError::new(ErrorCode::RequestRateLimited)
                .with_retry_after((start + CODE_WINDOW_SECS - t).max(1))
                .into());
        }
        let code = new_code();
        let salt = new_token();
        store::replace_code(
            c,
            &Code {
                email_id: link.email_id.clone(),
                position: link.position,
                code_hash: hash_token(&salted(&salt, &code)),
                code_salt: salt,
                attempts: 0,
                created_at: t,
                expire_at: t + CODE_SECS,
            },
        )?;
        let body = format!(
            "Your code to send files through the link you were given is {code}.\n\n\
             It works for {} minutes, once. If you did not ask for it, ignore this message.\n",
            CODE_SECS / 60
        );
        // The message expires with its code: not sent by then, it never is.
        coffer_store::mail::queue(
            c,
            &coffer_store::mail::NewMessage {
                email_id: None,
                user_id: None,
                to: &link.recipient,
                subject: "Your code for a file request",
                body: &body,
                expires_at: Some(t + CODE_SECS),
            },
            &domain,
            t,
        )?;
        events::record(
            c,
            "requestfile.recipient.code",
            None,
            json!({"id": link.id, "requestorId": link.requestor_id, "recipient": link.recipient}),
        )?;
        Ok(mask_address(&link.recipient))
    })
}

/// Checks a code: a right one opens a session of `SESSION_SECS` for this recipient and answers
/// its token (kept only hashed). A wrong one counts on the code (void after `MAX_ATTEMPTS`) and
/// on the client address; both, and no live code, answer 422 `ERR_INVALID_PARAMETER` (`code`).
pub fn verify_code(ctx: &Ctx, v: &Visitor, code: &str) -> Result<String> {
    let anyone = Visitor {
        user: None,
        session: None,
        ..v.clone()
    };
    let link = match admit(ctx, &anyone) {
        Ok((link, _)) => link,
        Err(e) if e.to_api().code == ErrorCode::AuthRequestFile => {
            let found = ctx.read(|c| super::lookup(c, &v.reference))?;
            found.ok_or_else(super::unknown)?
        }
        Err(e) => return Err(e),
    };
    if !link.require_auth {
        return Err(not_needed());
    }
    let outcome = ctx.write(|c| {
        let t = now();
        let link = fresh(c, link.id)?;
        check_open(c, &link, t)?;
        let Some(stored) = store::attempt(c, &link.email_id, link.position, t, MAX_ATTEMPTS)? else {
            return Ok(None);
        };
        match check_code(&stored, code) {
            CodeCheck::Right => {
                store::delete_code(c, &link.email_id, link.position)?;
                store::delete_expired_sessions(c, t)?;
                let token = new_token();
                store::insert_session(
                    c,
                    &Session {
                        token_hash: hash_token(&token),
                        email_id: link.email_id.clone(),
                        position: link.position,
                        created_at: t,
                        expire_at: t + SESSION_SECS,
                    },
                )?;
                events::record(
                    c,
                    "requestfile.recipient.verify",
                    link.recipient_user_id.as_deref(),
                    json!({"id": link.id, "requestorId": link.requestor_id, "recipient": link.recipient}),
                )?;
                Ok(Some(Ok(token)))
            }
            CodeCheck::Wrong(left) => {
                if left == 0 {
                    store::delete_code(c, &link.email_id, link.position)?;
                }
                events::record(
                    c,
                    "requestfile.recipient.reject",
                    None,
                    json!({"id": link.id, "requestorId": link.requestor_id, "recipient": link.recipient, "attemptsLeft": left}),
                )?;
                Ok(Some(Err(left)))
            }
        }
    })?;
    let wrong = |msg: String| -> crate::Error {
        ApiError::field(ErrorCode::InvalidParameter, "code")
            .with_message(msg)
            .into()
    };
    match outcome {
        Some(Ok(token)) => Ok(token),
        other => {
            let k = super::keys(v.client_ip.as_deref());
            if !k.is_empty() {
                std::thread::sleep(throttle::failed(ctx, &k)?);
            }
            Err(match other {
                Some(Err(left)) if left > 0 => wrong(format!(
                    "The parameter is invalid (code: wrong; {left} attempt{} left).",
                    if left == 1 { "" } else { "s" }
                )),
                _ => wrong(
                    "The parameter is invalid (code: no live code; ask for a new one).".into(),
                ),
            })
        }
    }
}

/// How long a session a code opened lasts, in seconds.
pub const SESSION_LIFETIME: i64 = SESSION_SECS;

/// What the session's CSRF token is derived from: the session token under a prefix of its own,
/// so that the CSRF token, which the page may read, never equals the session's stored hash.
fn csrf_input(session: &str) -> String {
    format!("rf-csrf:{session}")
}

/// The CSRF token of a code session: a hash of the session's token, so it needs no storage and
/// only whoever holds the session token (or the answer that opened it) can tell it. A call that
/// changes something and that the session's cookie authorises carries it in a header, which a
/// page of another site cannot set.
pub fn csrf_token(session: &str) -> String {
    hash_token(&csrf_input(session))
}

/// Whether `presented` is the CSRF token of `session` (compared in constant time).
pub fn csrf_matches(session: &str, presented: &str) -> bool {
    !presented.is_empty() && coffer_oauth::secrets::verify_token(&csrf_input(session), presented)
}
