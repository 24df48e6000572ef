//! TOTP two-factor sign-in (RFC 6238, `coffer_oauth::totp`): enrolment with a secret and an
//! `otpauth://` URI, confirmed by a first code; the check of a code (replay refused); reset.

use super::{method, refuse_if_on, Method};
use crate::platform::auth::Caller;
use crate::platform::events;
use crate::platform::views::{AuthRedirect, TotpSetup};
use crate::{now, Ctx, Result};
use coffer_domain::net::safe_referral;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_oauth::totp::{self, TotpError, TotpSecret};

/// What the second step asks of a TOTP user.
pub const TOTP_PROMPT: &str = "Enter the 6-digit code from your authenticator app.";

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
/// (counted like a sign-in, see [`crate::identity::accounts::reauthenticate`]), so that a stolen token
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
    crate::identity::accounts::reauthenticate(ctx, &caller.user, password, "password", client_ip)?;
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
