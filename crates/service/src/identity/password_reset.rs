//! Password reset by mail: `POST /rest/users/requestPasswordReset` sends a single-use link to an
//! account's address, `POST /rest/users/resetPassword` sets a new password with it.
//!
//! A request answers the same for every well-formed address, known or not, and does the same
//! work up to the writes that only a usable account gets, so the call cannot tell which accounts
//! exist. The link carries 256 random bits; only their SHA-256 is stored, and a link is looked up
//! by that hash. A link lives [`crate::Config::password_reset_secs`] (default
//! [`RESET_SECS`]); a new request replaces the user's earlier links, and a reset uses up every
//! link of the user. Any link that does not work (unknown, expired, used, or its account no
//! longer usable) gets one answer, 403 `ERR_ACCESS_USER`.

use crate::identity::accounts;
use crate::platform::events;
use crate::{now, Ctx, Result};
use coffer_domain::Email;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_oauth::secrets::{hash_token, new_token};

/// How long a reset link works by default: one hour.
pub const RESET_SECS: i64 = 3600;

/// The path of the reset page the link opens (served by coffer-http's pages).
pub const RESET_PAGE_PATH: &str = "/passwordReset";

/// The link sent for `token`.
pub fn reset_link(base_url: &str, token: &str) -> String {
    format!("{base_url}{RESET_PAGE_PATH}?token={token}")
}

/// The token in the `link` field of `resetPassword`: the link as sent (its `token` query
/// parameter), or the bare token. `None` when there is nothing token-like.
pub fn token_from_link(link: &str) -> Option<&str> {
    let link = link.trim();
    let token = match link.find("token=") {
        Some(i) => {
            let rest = &link[i + "token=".len()..];
            &rest[..rest.find(['&', '#']).unwrap_or(rest.len())]
        }
        None if !link.contains(['/', '?', '=']) => link,
        None => return None,
    };
    let ok = !token.is_empty()
        && token.len() <= 128
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    ok.then_some(token)
}

/// The answer to every link that does not work.
fn link_refused() -> Error {
    ApiError::new(ErrorCode::AccessUser)
        .with_message("Insufficient access permissions (the link is invalid, expired or used).")
        .into()
}

/// `POST /rest/users/requestPasswordReset`: for a usable account with this address, replaces
/// its reset links with a new one and puts the mail with the link in the outbox, in one
/// transaction. Answers `Ok` for every well-formed address; 422 `ERR_INPUT_INVALID_EMAIL` for
/// one that is not; 429 past the per-address or per-client limits
/// ([`crate::platform::throttle::spend_password_reset`]), which count every request alike.
pub fn request(ctx: &Ctx, email: &str, client_ip: Option<&str>) -> Result<()> {
    let email = Email::parse(email).map_err(|m| {
        ApiError::field(ErrorCode::InputInvalidEmail, "email")
            .with_message(format!("The value is not a valid email address ({m})."))
    })?;
    // Made for every request, used only for a usable account.
    let token = new_token();
    let token_hash = hash_token(&token);
    let t = now();
    let expires_at = t + ctx.config.password_reset_secs;
    let limits = ctx.config.reset_limits.clone();
    ctx.write(|c| {
        crate::platform::throttle::spend_password_reset(c, &limits, email.as_str(), client_ip, t)?;
        let Some(user) = coffer_store::users::by_email(c, email.as_str())? else {
            return Ok(());
        };
        if !user.is_usable() {
            return Ok(());
        }
        coffer_store::password_resets::replace(c, &user.id, &token_hash, t, expires_at)?;
        let link = reset_link(&ctx.config.base_url, &token);
        // The message expires with its link: not sent by then, it never is.
        coffer_store::mail::queue(
            c,
            &coffer_store::mail::NewMessage {
                email_id: None,
                user_id: Some(&user.id),
                to: &user.email,
                subject: &format!("Reset your {} password", ctx.config.service_name),
                body: &mail_body(
                    &ctx.config.service_name,
                    &user.email,
                    &link,
                    ctx.config.password_reset_secs,
                ),
                expires_at: Some(expires_at),
            },
            &ctx.config.message_domain(),
            t,
        )?;
        events::record(
            c,
            "user.password.resetRequest",
            None,
            serde_json::json!({"id": user.id, "userId": user.id, "expiresAt": expires_at}),
        )
    })
}

/// `cofferd user reset-password`: a reset link for a usable account, made for the operator at
/// the server's console, who hands it over; it replaces the account's earlier links as a
/// request does, and nothing is mailed. Returns the link and when it stops working. A deleted
/// or deactivated account answers 404 `ERR_ENTITY_NOT_FOUND`.
pub fn operator_link(ctx: &Ctx, user_id: &str) -> Result<(String, i64)> {
    let token = new_token();
    let token_hash = hash_token(&token);
    let t = now();
    let expires_at = t + ctx.config.password_reset_secs;
    ctx.write(|c| {
        let user = coffer_store::users::by_id(c, user_id)?
            .filter(|u| u.is_usable())
            .ok_or_else(|| ApiError::new(ErrorCode::EntityNotFound))?;
        coffer_store::password_resets::replace(c, &user.id, &token_hash, t, expires_at)?;
        events::record(
            c,
            "user.password.resetRequest",
            None,
            serde_json::json!({"id": user.id, "userId": user.id, "expiresAt": expires_at}),
        )
    })?;
    Ok((reset_link(&ctx.config.base_url, &token), expires_at))
}

/// The text of the reset mail.
fn mail_body(service: &str, email: &str, link: &str, secs: i64) -> String {
    let minutes = (secs / 60).max(1);
    format!(
        "Someone asked to reset the password of the {service} account {email}.\n\n\
         To choose a new password, open this link within {minutes} minutes:\n\n{link}\n\n\
         The link works once. If you did not ask for this, ignore this message: your password \
         stays as it is.\n"
    )
}

/// `POST /rest/users/resetPassword`: with a working link, sets the new password, uses up the
/// user's links, clears a due password change and ends every session and token of the user.
/// A password the policy refuses answers 422 and leaves the link working.
pub fn reset(ctx: &Ctx, link: &str, password: &str) -> Result<()> {
    let token_hash = hash_token(token_from_link(link).ok_or_else(link_refused)?);
    let user_id = ctx
        .with_conn(|c| {
            Ok(coffer_store::password_resets::live_user(
                c,
                &token_hash,
                now(),
            )?)
        })?
        .ok_or_else(link_refused)?;
    accounts::check_policy(ctx, password)?;
    let hash = accounts::hash_password(password)?;
    ctx.write(|c| {
        // One conditional delete: of two concurrent resets with the same link, one gets none.
        if coffer_store::password_resets::consume(c, &token_hash, now())?.as_deref()
            != Some(user_id.as_str())
        {
            return Err(link_refused());
        }
        let user = coffer_store::users::by_id(c, &user_id)?
            .filter(|u| u.is_usable())
            .ok_or_else(link_refused)?;
        let t = now();
        coffer_store::users::set_password(c, &user.id, &hash, t)?;
        coffer_store::users::clear_force_password_change(c, &user.id)?;
        let tokens = coffer_store::tokens::revoke_user(c, &user.id)?;
        let sessions = coffer_store::web_sessions::delete_for_user(c, &user.id, None)?;
        events::record(
            c,
            "user.password.reset",
            Some(&user.id),
            serde_json::json!({"id": user.id, "userId": user.id, "sessionsEnded": tokens + sessions}),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use coffer_domain::Role;

    #[test]
    fn the_token_is_read_from_the_link_or_given_bare() {
        let t = new_token();
        let link = reset_link("https://files.example.com", &t);
        assert_eq!(
            link,
            format!("https://files.example.com/passwordReset?token={t}")
        );
        assert_eq!(token_from_link(&link), Some(t.as_str()));
        assert_eq!(token_from_link(&format!(" {link}&x=1 ")), Some(t.as_str()));
        assert_eq!(token_from_link(&format!("{link}#top")), Some(t.as_str()));
        assert_eq!(token_from_link(&t), Some(t.as_str()));
        for bad in [
            "",
            "   ",
            "https://x/passwordReset",
            "https://x/?token=",
            "a b",
            "<script>",
        ] {
            assert_eq!(token_from_link(bad), None, "{bad:?}");
        }
        assert_eq!(token_from_link(&"a".repeat(129)), None);
    }

    #[test]
    fn the_mail_names_the_link_and_its_lifetime() {
        let b = mail_body(
            "Coffer",
            "ann@example.com",
            "https://x/passwordReset?token=t",
            3600,
        );
        assert!(b.contains("https://x/passwordReset?token=t\n"));
        assert!(b.contains("within 60 minutes"));
        assert!(b.contains("ann@example.com"));
    }

    fn user(ctx: &Ctx, email: &str) -> coffer_store::models::User {
        accounts::create_user(
            ctx,
            accounts::NewUser {
                email: email.into(),
                name: "Ann".into(),
                password: Some("Old-Password-1".into()),
                role: Role::User,
                profile: None,
            },
            None,
        )
        .unwrap()
        .0
    }

    /// The tokens of the reset mails to `to`, in no particular order.
    fn mailed_tokens(ctx: &Ctx, to: &str) -> Vec<String> {
        let mails = ctx
            .with_conn(|c| Ok(coffer_store::mail::to_address(c, to)?))
            .unwrap();
        mails
            .iter()
            .filter_map(|m| {
                let at = m.body.find("token=")? + "token=".len();
                Some(m.body[at..].split_whitespace().next()?.to_string())
            })
            .collect()
    }

    fn mailed_token(ctx: &Ctx, to: &str) -> Option<String> {
        let mut all = mailed_tokens(ctx, to);
        assert!(all.len() <= 1, "{all:?}");
        all.pop()
    }

    #[test]
    fn a_link_resets_once_and_a_new_request_supersedes_the_old() {
        let (_d, ctx) = crate::test_support::ctx();
        let u = user(&ctx, "ann@example.com");
        request(&ctx, "ANN@example.com", Some("10.0.0.1")).unwrap();
        let first = mailed_token(&ctx, "ann@example.com").unwrap();
        request(&ctx, "ann@example.com", Some("10.0.0.1")).unwrap();
        let second = mailed_tokens(&ctx, "ann@example.com")
            .into_iter()
            .find(|t| *t != first)
            .unwrap();
        assert_ne!(first, second);
        let code = |r: Result<()>| r.unwrap_err().to_api().code;
        assert_eq!(
            code(reset(&ctx, &first, "New-Password-2")),
            ErrorCode::AccessUser
        );
        // The policy refuses: the link keeps working.
        assert_eq!(
            code(reset(&ctx, &second, "weak")),
            ErrorCode::InputPasswordComplexityError
        );
        reset(&ctx, &second, "New-Password-2").unwrap();
        assert!(
            accounts::check_credentials(&ctx, &u.email, "New-Password-2")
                .unwrap()
                .is_some()
        );
        assert_eq!(
            code(reset(&ctx, &second, "New-Password-3")),
            ErrorCode::AccessUser
        );
    }

    #[test]
    fn unknown_and_inactive_accounts_get_no_mail_and_bad_addresses_422() {
        let (_d, ctx) = crate::test_support::ctx();
        request(&ctx, "nobody@example.com", None).unwrap();
        assert_eq!(mailed_token(&ctx, "nobody@example.com"), None);
        let u = user(&ctx, "bob@example.com");
        ctx.write(|c| {
            coffer_store::users::admin_update(
                c,
                &u.id,
                u.version,
                &coffer_store::users::AdminChanges {
                    active: Some(false),
                    ..Default::default()
                },
                now(),
            )?;
            Ok(())
        })
        .unwrap();
        request(&ctx, "bob@example.com", None).unwrap();
        assert_eq!(mailed_token(&ctx, "bob@example.com"), None);
        let e = request(&ctx, "not an address", None).unwrap_err().to_api();
        assert_eq!(e.code, ErrorCode::InputInvalidEmail);
    }

    #[test]
    fn an_expired_link_is_refused() {
        let (_d, mut ctx) = crate::test_support::ctx();
        ctx.config.password_reset_secs = -1;
        user(&ctx, "ann@example.com");
        request(&ctx, "ann@example.com", None).unwrap();
        let t = mailed_token(&ctx, "ann@example.com").unwrap();
        let e = reset(&ctx, &t, "New-Password-2").unwrap_err().to_api();
        assert_eq!(e.code, ErrorCode::AccessUser);
    }

    #[test]
    fn requests_are_limited_per_address() {
        let (_d, mut ctx) = crate::test_support::ctx();
        ctx.config.reset_limits.per_address = 2;
        for _ in 0..2 {
            request(&ctx, "x@example.com", Some("10.0.0.2")).unwrap();
        }
        let e = request(&ctx, "X@example.com", Some("10.0.0.3"))
            .unwrap_err()
            .to_api();
        assert_eq!(e.code, ErrorCode::RequestRateLimited);
        assert!(e.retry_after.is_some());
        request(&ctx, "y@example.com", Some("10.0.0.2")).unwrap();
    }
}
