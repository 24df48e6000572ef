//! Two-factor authentication: TOTP (RFC 6238, `coffer_oauth::totp`: enrolment with a secret and
//! an `otpauth://` URI, confirmed by a first code) or SMS one-time codes ([`crate::tfa_sms`]), one
//! method at a time; reset; and the second step of an interactive sign-in (`challenge`, then
//! `auth` with a code; a remembered browser skips it).

use crate::auth::Caller;
use crate::sessions::{safe_referral, SESSION_FAMILY_PREFIX};
use crate::views::{AuthRedirect, TotpSetup};
use crate::{events, now, Ctx, Result};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_oauth::secrets::{hash_token, new_token};
use coffer_oauth::totp::{self, TotpError, TotpSecret};

/// How long a remembered browser skips the second step, unless configured
/// ([`crate::Config::tfa_remember_secs`]).
pub const REMEMBER_SECS: i64 = 30 * 86_400;

/// A user's two-factor method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Totp,
    Sms,
}

/// The user's two-factor method, if two-factor sign-in is on.
pub fn method(ctx: &Ctx, user: &coffer_store::models::User) -> Result<Option<Method>> {
    if user.totp_enabled {
        return Ok(Some(Method::Totp));
    }
    Ok(crate::tfa_sms::enabled(ctx, user)?.then_some(Method::Sms))
}

pub const TOTP_PROMPT: &str = "Enter the 6-digit code from your authenticator app.";

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
            "passcodeDescription": "Enter the code sent to your mobile phone.",
            "rechallengeLabel": "Resend code",
            "challengeWaitMessage": "Sending code...",
            "rechallengeMessage": "Resend the passcode",
            "mobileNumber": crate::tfa_sms::mask(u.mobile_number.as_deref().unwrap_or_default()),
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

/// What an authenticator app needs to enrol `secret`: the account (the user's email), the
/// issuer (the server's brand), the secret, and the QR code of its `otpauth://` URI.
fn setup_view(
    ctx: &Ctx,
    user: &coffer_store::models::User,
    secret: &TotpSecret,
) -> Result<TotpSetup> {
    let issuer = ctx.config.service_name.clone();
    let uri = totp::otpauth_uri(secret, &issuer, &user.email);
    let image = coffer_oauth::qr::png_data_uri(&uri).map_err(Error::internal)?;
    Ok(TotpSetup {
        username: user.email.clone(),
        issuer,
        secret: secret.to_base32(),
        image,
    })
}

fn refuse_if_on(ctx: &Ctx, user: &coffer_store::models::User) -> Result<()> {
    if method(ctx, user)?.is_some() {
        return Err(ApiError::new(ErrorCode::EntityExists)
            .with_message("The entity exists (two-factor sign-in is on; reset it first).")
            .into());
    }
    Ok(())
}

/// `GET /rest/users/me/tfa/setupTotpSecret`: a new secret, pending until a code confirms it.
pub fn setup(ctx: &Ctx, caller: &Caller) -> Result<TotpSetup> {
    refuse_if_on(ctx, &caller.user)?;
    let secret = TotpSecret::generate();
    let view = setup_view(ctx, &caller.user, &secret)?;
    ctx.write(|c| {
        Ok(
            coffer_store::users::set_totp(c, &caller.user.id, Some(&view.secret), false, now())
                .map(|_| ())?,
        )
    })?;
    Ok(view)
}

fn secret_of_user(user: &coffer_store::models::User) -> Result<TotpSecret> {
    let s = user.totp_secret.as_deref().ok_or_else(|| {
        Error::from(
            ApiError::new(ErrorCode::EntityNotFound)
                .with_message("The entity was not found (no TOTP secret is set up)."),
        )
    })?;
    TotpSecret::from_base32(s).map_err(Error::internal)
}

/// Checks a code against the caller's secret (see [`check_user_code`]).
fn check_code(ctx: &Ctx, caller: &Caller, otp: &str) -> Result<bool> {
    check_user_code(ctx, &caller.user, otp)
}

/// Checks a code against a user's secret, refusing replay; records the step used. Also for a
/// user who is not a caller yet (the authorization page).
pub fn check_user_code(ctx: &Ctx, user: &coffer_store::models::User, otp: &str) -> Result<bool> {
    let secret = secret_of_user(user)?;
    match totp::verify(&secret, otp.trim(), now(), user.totp_last_step) {
        Ok(step) => {
            let fresh =
                ctx.write(|c| Ok(coffer_store::users::use_totp_step(c, &user.id, step)?))?;
            Ok(fresh == 1)
        }
        Err(TotpError::Malformed) => {
            Err(ApiError::field(ErrorCode::InputInvalidFormat, "otp").into())
        }
        Err(TotpError::Invalid | TotpError::Replayed) => Ok(false),
    }
}

/// `POST /rest/users/me/tfa/verifyTotpSecret {otp, referral?}`: a code of the pending secret
/// turns two-factor sign-in on; the answer says where to go next (the referral, if it stays on
/// this server).
pub fn verify_setup(
    ctx: &Ctx,
    caller: &Caller,
    otp: &str,
    referral: Option<&str>,
) -> Result<AuthRedirect> {
    confirm_pending(ctx, caller, otp)?;
    Ok(AuthRedirect {
        redirect_url: safe_referral(&ctx.config.base_url, referral),
    })
}

/// A code of the pending secret turns TOTP sign-in on.
fn confirm_pending(ctx: &Ctx, caller: &Caller, otp: &str) -> Result<()> {
    refuse_if_on(ctx, &caller.user)?;
    if !check_code(ctx, caller, otp)? {
        return Err(ApiError::field(ErrorCode::InvalidParameter, "otp")
            .with_message("The parameter is invalid (the code does not match).")
            .into());
    }
    ctx.write(|c| {
        coffer_store::users::enable_totp(c, &caller.user.id, now())?;
        events::record(
            c,
            "user.tfa.enable",
            Some(&caller.user.id),
            serde_json::json!({"userId": caller.user.id, "type": "totp"}),
        )
    })
}

/// The outcome of a TOTP reset.
pub enum Reset {
    /// A new secret, pending until a code confirms it.
    Setup(TotpSetup),
    /// The code confirmed the new secret: TOTP sign-in is on again.
    Confirmed,
}

/// `POST /rest/users/me/tfa/resetTotpSecret {password, otp?}`: needs the current password
/// (counted like a sign-in, see [`crate::accounts::reauthenticate`]), so that a stolen token
/// cannot switch the second factor off. Without `otp`: TOTP sign-in off, the old secret
/// forgotten, a new one pending (the setup answer). With `otp`: a code of the new secret turns
/// TOTP sign-in on again. A user who signs in with SMS codes turns those off first (409).
pub fn reset(
    ctx: &Ctx,
    caller: &Caller,
    password: &str,
    otp: Option<&str>,
    client_ip: Option<&str>,
) -> Result<Reset> {
    crate::accounts::reauthenticate(ctx, &caller.user, password, "password", client_ip)?;
    if let Some(otp) = otp {
        confirm_pending(ctx, caller, otp)?;
        return Ok(Reset::Confirmed);
    }
    if method(ctx, &caller.user)? == Some(Method::Sms) {
        return Err(ApiError::new(ErrorCode::EntityExists)
            .with_message("The entity exists (two-factor sign-in by SMS is on; turn it off first).")
            .into());
    }
    let secret = TotpSecret::generate();
    let view = setup_view(ctx, &caller.user, &secret)?;
    ctx.write(|c| {
        coffer_store::users::set_totp(c, &caller.user.id, Some(&view.secret), false, now())?;
        events::record(
            c,
            "user.tfa.reset",
            Some(&caller.user.id),
            serde_json::json!({"userId": caller.user.id, "type": "totp"}),
        )
    })?;
    Ok(Reset::Setup(view))
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
/// code is sent (at most one per [`crate::tfa_sms::RESEND_SECS`], else 429).
pub fn challenge(ctx: &Ctx, caller: &Caller, referral: Option<&str>) -> Result<Step> {
    match method(ctx, &caller.user)? {
        None => Ok(Step::Next {
            redirect_url: safe_referral(&ctx.config.base_url, referral),
            remember_token: None,
        }),
        Some(Method::Totp) => Ok(Step::Challenge(TOTP_PROMPT.into())),
        Some(Method::Sms) => {
            let number = caller.user.mobile_number.as_deref().unwrap_or_default();
            crate::tfa_sms::send_code(ctx, &caller.user, number, crate::tfa_sms::Purpose::SignIn)?;
            Ok(Step::Challenge(crate::tfa_sms::prompt(number)))
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
        Method::Totp => (!check_user_code(ctx, user, otp)?)
            .then(|| format!("The code is not valid. {TOTP_PROMPT}")),
        Method::Sms => match crate::tfa_sms::check(ctx, user, crate::tfa_sms::Purpose::SignIn, otp)? {
            crate::tfa_sms::Check::Passed { .. } => None,
            crate::tfa_sms::Check::Wrong => Some(format!(
                "The code is not valid. Enter the code sent to your mobile phone (at most {} tries per code).",
                crate::tfa_sms::MAX_ATTEMPTS
            )),
            crate::tfa_sms::Check::NoCode => Some(
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
    let keys = crate::throttle::second_factor_keys(&caller.user.email, &caller.user.id, client_ip);
    if let Some(wait) = crate::throttle::locked(ctx, &keys)? {
        return Err(ApiError::new(ErrorCode::RequestRateLimited)
            .with_retry_after(wait)
            .into());
    }
    if let Some(again) = check_second_step(ctx, &caller.user, m, otp)? {
        std::thread::sleep(crate::throttle::failed(ctx, &keys)?);
        return Ok(Step::Challenge(again));
    }
    crate::throttle::second_factor_succeeded(ctx, &caller.user.id)?;
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
