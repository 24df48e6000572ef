//! The one dispatcher of two-factor sign-in: what a user's configuration shows, and the second
//! step of an interactive sign-in (`challenge`, then `auth` with a code; a remembered browser
//! skips it), each picking the user's method ([`super::method`]) and calling [`super::totp`] or
//! [`super::sms`].

use super::sms::{self, Check, Purpose};
use super::totp::{self, TOTP_PROMPT};
use super::{method, Method};
use crate::identity::sessions::SESSION_FAMILY_PREFIX;
use crate::platform::auth::Caller;
use crate::platform::{events, throttle};
use crate::{now, Ctx, Result};
use coffer_domain::net::safe_referral;
use coffer_errors::{ApiError, ErrorCode};
use coffer_oauth::secrets::{hash_token, new_token};

/// `GET /rest/users/me/tfa/config`: `{enabled, type, pendingSetup}`, and with a method on the
/// reference's module description (`module` `TOTP` or `SMSOTP`, the labels, and for SMS the
/// masked number).
pub fn config(ctx: &Ctx, caller: &Caller) -> Result<serde_json::Value> {
    let u = &caller.user;
    let m = method(ctx, u)?;
    let sms_pending = m.is_none()
        && ctx.with_conn(|c| Ok(coffer_store::sms_codes::pending(c, &u.id, "enrol", now())?))?;
    let mut v = serde_json::json!({
        "enabled": m.is_some(),
        "type": m.map(|m| match m { Method::Totp => "totp", Method::Sms => "sms" }),
        "pendingSetup": m.is_none() && (u.totp_secret.is_some() || sms_pending),
    });
    let module = match m {
        None => return Ok(v),
        Some(Method::Totp) => serde_json::json!({
            "module": "TOTP",
            "passcodeLabel": "Authenticator code",
            "passcodeDescription": TOTP_PROMPT,
            "rechallengeLabel": "",
            "challengeWaitMessage": "",
            "rechallengeMessage": "",
        }),
        Some(Method::Sms) => serde_json::json!({
            "module": "SMSOTP",
            "passcodeLabel": "Enter passcode",
            "passcodeDescription": "Enter the code from the text message to your mobile phone.",
            "rechallengeLabel": "Resend code",
            "challengeWaitMessage": "Sending code...",
            "rechallengeMessage": "Resend the passcode",
            "mobileNumber": sms::mask(u.mobile_number.as_deref().unwrap_or_default()),
            // The number receives the codes: to change it, turn SMS two-factor sign-in off first.
            "allowNumberChange": false,
        }),
    };
    if let (Some(o), serde_json::Value::Object(extra)) = (v.as_object_mut(), module) {
        o.extend(extra);
        o.insert("challengeShouldSendPassword".into(), false.into());
        o.insert("rememberDeviceEnabled".into(), true.into());
        o.insert("passcodeMask".into(), false.into());
    }
    Ok(v)
}

/// The answer of a two-factor step: go on, or another round.
pub enum Step {
    Next {
        redirect_url: String,
        remember_token: Option<String>,
    },
    Challenge(String),
}

/// `POST /rest/users/me/tfa/challenge`: what the second step asks for. For an SMS user a fresh
/// code is sent (at most one per [`sms::RESEND_SECS`], else 429).
pub fn challenge(ctx: &Ctx, caller: &Caller, referral: Option<&str>) -> Result<Step> {
    match method(ctx, &caller.user)? {
        None => Ok(Step::Next {
            redirect_url: safe_referral(&ctx.config.base_url, referral),
            remember_token: None,
        }),
        Some(Method::Totp) => Ok(Step::Challenge(TOTP_PROMPT.into())),
        Some(Method::Sms) => {
            let number = caller.user.mobile_number.as_deref().unwrap_or_default();
            sms::send_code(ctx, &caller.user, number, Purpose::SignIn)?;
            Ok(Step::Challenge(sms::prompt(number)))
        }
    }
}

/// A second-step code checked for a user: `Ok(None)` when it passes, else what to tell them.
pub fn check_second_step(
    ctx: &Ctx,
    user: &coffer_store::models::User,
    m: Method,
    otp: &str,
) -> Result<Option<String>> {
    Ok(match m {
        Method::Totp => (!totp::check_user_code(ctx, user, otp)?)
            .then(|| format!("The code is not valid. {TOTP_PROMPT}")),
        Method::Sms => match sms::check(ctx, user, Purpose::SignIn, otp)? {
            Check::Passed { .. } => None,
            Check::Wrong => Some(format!(
                "The code is not valid. Enter the code from the text message to your mobile phone (at most {} tries per code).",
                sms::MAX_ATTEMPTS
            )),
            Check::NoCode => Some(
                "There is no valid code: it expired, was used, or had too many wrong tries. Ask for a new code."
                    .into(),
            ),
        },
    })
}

/// `POST /rest/users/me/tfa/auth {otp, referral, rememberDevice}`: a valid code completes the
/// sign-in (or leads to a due password change); a wrong one asks again. Failures count for the
/// brute-force throttle (per account and client address), which refuses a locked one with 429.
pub fn auth(
    ctx: &Ctx,
    caller: &Caller,
    otp: &str,
    referral: Option<&str>,
    remember: bool,
    client_ip: Option<&str>,
) -> Result<Step> {
    let Some(m) = method(ctx, &caller.user)? else {
        return Ok(Step::Next {
            redirect_url: safe_referral(&ctx.config.base_url, referral),
            remember_token: None,
        });
    };
    let keys = throttle::second_factor_keys(&caller.user.email, &caller.user.id, client_ip);
    if let Some(wait) = throttle::locked(ctx, &keys)? {
        return Err(ApiError::new(ErrorCode::RequestRateLimited)
            .with_retry_after(wait)
            .into());
    }
    if let Some(again) = check_second_step(ctx, &caller.user, m, otp)? {
        std::thread::sleep(throttle::failed(ctx, &keys)?);
        return Ok(Step::Challenge(again));
    }
    throttle::second_factor_succeeded(ctx, &caller.user.id)?;
    let due = caller.user.force_password_change;
    let remember_token = remember.then(new_token);
    ctx.write(|c| {
        if let Some(session) = caller.family_id.strip_prefix(SESSION_FAMILY_PREFIX) {
            coffer_store::web_sessions::set_state(
                c,
                session,
                if due { "password_change" } else { "active" },
            )?;
        }
        if let Some(t) = &remember_token {
            coffer_store::users::remember_device(
                c,
                &hash_token(t),
                &caller.user.id,
                now() + ctx.config.tfa_remember_secs,
            )?;
        }
        events::record(
            c,
            "user.tfa.pass",
            Some(&caller.user.id),
            serde_json::json!({"userId": caller.user.id, "remember": remember}),
        )
    })?;
    let next = safe_referral(&ctx.config.base_url, referral);
    let redirect_url = if due {
        format!("{}/#/forcedPasswordChange", ctx.config.base_url)
    } else {
        next
    };
    Ok(Step::Next {
        redirect_url,
        remember_token,
    })
}
