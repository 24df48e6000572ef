//! Two-factor authentication with TOTP (RFC 6238, `coffer_oauth::totp`): enrolment (a secret and
//! an `otpauth://` URI, confirmed by a first code), reset, and the second step of an interactive
//! sign-in (`challenge`, then `auth` with a code; a remembered browser skips it).

use crate::auth::Caller;
use crate::sessions::{safe_referral, SESSION_FAMILY_PREFIX};
use crate::{events, now, Ctx, Result};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_oauth::secrets::{hash_token, new_token};
use coffer_oauth::totp::{self, TotpError, TotpSecret};

/// How long a remembered browser skips the second step.
pub const REMEMBER_SECS: i64 = 30 * 86_400;

/// `GET /rest/users/me/tfa/config`.
pub fn config(caller: &Caller) -> serde_json::Value {
    let u = &caller.user;
    serde_json::json!({
        "enabled": u.totp_enabled,
        "type": if u.totp_enabled { Some("totp") } else { None },
        "pendingSetup": !u.totp_enabled && u.totp_secret.is_some(),
    })
}

/// `GET /rest/users/me/tfa/setupTotpSecret`: a new secret, pending until a code confirms it.
pub fn setup(ctx: &Ctx, caller: &Caller) -> Result<serde_json::Value> {
    if caller.user.totp_enabled {
        return Err(ApiError::new(ErrorCode::EntityExists)
            .with_message("The entity exists (two-factor sign-in is on; reset it first).")
            .into());
    }
    let secret = TotpSecret::generate();
    let encoded = secret.to_base32();
    ctx.write(|c| {
        Ok(
            coffer_store::users::set_totp(c, &caller.user.id, Some(&encoded), false, now())
                .map(|_| ())?,
        )
    })?;
    Ok(serde_json::json!({
        "secret": encoded,
        "uri": totp::otpauth_uri(&secret, &ctx.config.service_name, &caller.user.email),
    }))
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

/// `POST /rest/users/me/tfa/verifyTotpSecret {otp}`: a code of the pending secret turns
/// two-factor sign-in on.
pub fn verify_setup(ctx: &Ctx, caller: &Caller, otp: &str) -> Result<serde_json::Value> {
    if caller.user.totp_enabled {
        return Err(ApiError::new(ErrorCode::EntityExists).into());
    }
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
            serde_json::json!({"userId": caller.user.id}),
        )
    })?;
    Ok(serde_json::json!({"enabled": true}))
}

/// `POST /rest/users/me/tfa/resetTotpSecret`: two-factor sign-in off, the secret forgotten.
pub fn reset(ctx: &Ctx, caller: &Caller) -> Result<()> {
    ctx.write(|c| {
        coffer_store::users::set_totp(c, &caller.user.id, None, false, now())?;
        events::record(
            c,
            "user.tfa.reset",
            Some(&caller.user.id),
            serde_json::json!({"userId": caller.user.id}),
        )
    })
}

/// The answer of a two-factor step: go on, or another round.
pub enum Step {
    Next {
        redirect_url: String,
        remember_token: Option<String>,
    },
    Challenge(String),
}

const CHALLENGE: &str = "Enter the 6-digit code from your authenticator app.";

/// `POST /rest/users/me/tfa/challenge`: what the second step asks for.
pub fn challenge(ctx: &Ctx, caller: &Caller, referral: Option<&str>) -> Result<Step> {
    if !caller.user.totp_enabled {
        return Ok(Step::Next {
            redirect_url: safe_referral(&ctx.config.base_url, referral),
            remember_token: None,
        });
    }
    Ok(Step::Challenge(CHALLENGE.into()))
}

/// `POST /rest/users/me/tfa/auth {otp, referral, rememberDevice}`: a valid code completes the
/// sign-in (or leads to a due password change); a wrong one asks again.
pub fn auth(
    ctx: &Ctx,
    caller: &Caller,
    otp: &str,
    referral: Option<&str>,
    remember: bool,
) -> Result<Step> {
    if !caller.user.totp_enabled {
        return Ok(Step::Next {
            redirect_url: safe_referral(&ctx.config.base_url, referral),
            remember_token: None,
        });
    }
    if !check_code(ctx, caller, otp)? {
        return Ok(Step::Challenge(format!(
            "The code is not valid. {CHALLENGE}"
        )));
    }
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
                now() + REMEMBER_SECS,
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
