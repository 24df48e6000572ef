//! SMS one-time codes for two-factor sign-in: a 6-digit code sent through the configured
//! [`crate::platform::sms::SmsSender`] to the user's mobile number, stored only as a salted hash, valid for
//! [`CODE_SECS`], used once, void after [`MAX_ATTEMPTS`] wrong tries, and sent at most once per
//! [`RESEND_SECS`] per user (a new code replaces the previous one) and at most as often per user
//! and per number as [`crate::platform::throttle::SmsLimits`] allows over its longer window.
//!
//! Enrolment: the saved number (`PUT /rest/users/me/mobileNumber`) receives a code
//! (`POST /rest/users/me/tfa/setupSms`); entering it (`POST /rest/users/me/tfa/verifySms`)
//! verifies the number and turns SMS two-factor sign-in on.

use super::refuse_if_on;
use crate::platform::auth::Caller;
use crate::platform::events;
use crate::{now, Ctx, Result};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_oauth::secrets::{hash_token, new_token, verify_token};
use coffer_store::models::User;
use coffer_store::sms_codes::{self, NewCode};
use rand::Rng;

/// How long a code is valid.
pub const CODE_SECS: i64 = 300;
/// Wrong tries after which a code is void.
pub const MAX_ATTEMPTS: i32 = 5;
/// The least time between two codes sent to a user.
pub const RESEND_SECS: i64 = 30;

/// What a code is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Confirming the number at enrolment.
    Enrol,
    /// The second step of a sign-in.
    SignIn,
}

impl Purpose {
    fn as_str(self) -> &'static str {
        match self {
            Purpose::Enrol => "enrol",
            Purpose::SignIn => "sign_in",
        }
    }
}

/// The number with all but its last two digits hidden.
pub fn mask(number: &str) -> String {
    let digits: Vec<char> = number.chars().filter(char::is_ascii_digit).collect();
    let keep = digits.len().saturating_sub(2);
    digits
        .iter()
        .enumerate()
        .map(|(i, d)| if i < keep { '*' } else { *d })
        .collect()
}

/// The end of the number a message may show.
fn last_digits(number: &str) -> String {
    mask(number).trim_start_matches('*').to_string()
}

/// What the second step asks of an SMS user.
pub fn prompt(number: &str) -> String {
    format!(
        "A code is being sent to your mobile phone (number ending in {}). Enter it when it arrives.",
        last_digits(number)
    )
}

fn salted(salt: &str, code: &str) -> String {
    format!("{salt}:{code}")
}

/// Sends a fresh code for `purpose` to `number`, replacing the user's previous code. Refused
/// with 429 (and `Retry-After`) within [`RESEND_SECS`] of the previous one, or over the user's
/// or the number's limit for the window ([`crate::platform::throttle::spend_sms`]); a refusal changes
/// nothing stored.
pub fn send_code(ctx: &Ctx, user: &User, number: &str, purpose: Purpose) -> Result<()> {
    let code = format!("{:06}", rand::rngs::OsRng.gen_range(0..1_000_000u32));
    let salt = new_token();
    let hash = hash_token(&salted(&salt, &code));
    let t = now();
    let refused = ctx.write(|c| {
        let refused = sms_codes::replace(
            c,
            &NewCode {
                user_id: &user.id,
                purpose: purpose.as_str(),
                to_number: number,
                code_salt: &salt,
                code_hash: &hash,
                sent_at: t,
                expires_at: t + CODE_SECS,
            },
            t - RESEND_SECS,
        )?;
        if refused.is_none() {
            // Over a limit, the error rolls back the new code with the counts.
            crate::platform::throttle::spend_sms(
                c,
                &ctx.config.sms_limits,
                crate::platform::throttle::SmsKind::Code,
                &user.id,
                number,
                t,
            )?;
        }
        Ok(refused)
    })?;
    if let Some(sent) = refused {
        return Err(ApiError::new(ErrorCode::RequestRateLimited)
            .with_message(format!(
                "Too many requests (a code was sent less than {RESEND_SECS} seconds ago)."
            ))
            .with_retry_after((sent + RESEND_SECS - t).max(1))
            .into());
    }
    let what = match purpose {
        Purpose::Enrol => "code to confirm this number",
        Purpose::SignIn => "sign-in code",
    };
    let body = format!(
        "{}: your {what} is {code}. It expires in {} minutes. Do not share it.",
        ctx.config.service_name,
        CODE_SECS / 60
    );
    if let Err(e) = crate::platform::sms::configured(ctx).send(ctx, Some(&user.id), number, &body) {
        // Nothing was sent: forget the code, so that the user may ask again at once.
        ctx.write(|c| Ok(sms_codes::delete(c, &user.id)?))?;
        return Err(e);
    }
    Ok(())
}

/// The outcome of entering a code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// The right code, now used up; it was sent to this number.
    Passed { number: String },
    /// A wrong code (one attempt counted).
    Wrong,
    /// No code to check: none was sent, or it was used, expired or out of attempts.
    NoCode,
}

/// Checks a code for `purpose` against the user's live code (in constant time), counting the
/// attempt. A malformed code is refused (422) without counting.
pub fn check(ctx: &Ctx, user: &User, purpose: Purpose, otp: &str) -> Result<Check> {
    let otp = otp.trim();
    if otp.len() != 6 || !otp.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::field(ErrorCode::InputInvalidFormat, "otp").into());
    }
    let t = now();
    ctx.write(|c| {
        let Some(a) = sms_codes::attempt(c, &user.id, purpose.as_str(), t, MAX_ATTEMPTS)? else {
            return Ok(Check::NoCode);
        };
        let passed = a
            .code_hash
            .as_deref()
            .is_some_and(|h| verify_token(&salted(&a.code_salt, otp), h));
        if passed || a.attempts >= MAX_ATTEMPTS {
            sms_codes::void(c, &user.id)?;
        }
        Ok(if passed {
            Check::Passed {
                number: a.to_number,
            }
        } else {
            Check::Wrong
        })
    })
}

/// `POST /rest/users/me/tfa/setupSms`: sends an enrolment code to the saved mobile number.
pub fn setup(ctx: &Ctx, caller: &Caller) -> Result<serde_json::Value> {
    refuse_if_on(ctx, &caller.user)?;
    let number = caller.user.mobile_number.as_deref().ok_or_else(|| {
        Error::from(ApiError::new(ErrorCode::EntityNotFound).with_message(
            "The entity was not found (no mobile number is set; set one with PUT /rest/users/me/mobileNumber).",
        ))
    })?;
    send_code(ctx, &caller.user, number, Purpose::Enrol)?;
    Ok(serde_json::json!({
        "challengeMsg": prompt(number),
        "mobileNumber": mask(number),
    }))
}

/// `POST /rest/users/me/tfa/verifySms {otp}`: the enrolment code verifies the number and turns
/// SMS two-factor sign-in on.
pub fn verify_setup(ctx: &Ctx, caller: &Caller, otp: &str) -> Result<serde_json::Value> {
    refuse_if_on(ctx, &caller.user)?;
    let number = match check(ctx, &caller.user, Purpose::Enrol, otp)? {
        Check::Passed { number } => number,
        Check::Wrong => {
            return Err(ApiError::field(ErrorCode::InvalidParameter, "otp")
                .with_message("The parameter is invalid (the code does not match).")
                .into())
        }
        Check::NoCode => {
            return Err(ApiError::field(ErrorCode::InvalidParameter, "otp")
                .with_message(
                    "The parameter is invalid (no valid code: it expired or was used up; ask for a new one).",
                )
                .into())
        }
    };
    ctx.write(|c| {
        if sms_codes::mark_number_verified(c, &caller.user.id, &number)? == 0 {
            // The number changed after the code was sent.
            return Err(ApiError::field(ErrorCode::InvalidParameter, "otp")
                .with_message("The parameter is invalid (the mobile number has changed since the code was sent).")
                .into());
        }
        sms_codes::enable(c, &caller.user.id, now())?;
        events::record(
            c,
            "user.tfa.enable",
            Some(&caller.user.id),
            serde_json::json!({"userId": caller.user.id, "type": "sms"}),
        )
    })?;
    Ok(serde_json::json!({"enabled": true, "type": "sms"}))
}

/// `POST /rest/users/me/tfa/resetSms {password}`: SMS two-factor sign-in off (the number
/// stays). Needs the current password, counted like a sign-in
/// ([`crate::identity::accounts::reauthenticate`]), so that a stolen token cannot switch it off.
pub fn reset(ctx: &Ctx, caller: &Caller, password: &str, client_ip: Option<&str>) -> Result<()> {
    crate::identity::accounts::reauthenticate(ctx, &caller.user, password, "password", client_ip)?;
    ctx.write(|c| {
        if sms_codes::disable(c, &caller.user.id)? {
            events::record(
                c,
                "user.tfa.reset",
                Some(&caller.user.id),
                serde_json::json!({"userId": caller.user.id, "type": "sms"}),
            )?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_all_but_the_last_two_digits() {
        assert_eq!(mask("+41791234567"), "*********67");
        assert_eq!(last_digits("+41791234567"), "67");
        assert_eq!(mask("7"), "7");
        assert!(prompt("+41791234567").contains("ending in 67"));
        assert!(!prompt("+41791234567").contains("4567"));
    }
}
