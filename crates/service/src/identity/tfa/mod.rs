//! Two-factor sign-in, one method at a time: TOTP ([`totp`], RFC 6238) or SMS one-time codes
//! ([`sms`]). This module holds what both methods and their callers share: which method a user
//! has ([`method`]) and the one-at-a-time rule ([`refuse_if_on`]). [`sign_in`] is the one
//! dispatcher: the configuration a user sees and the second step of an interactive sign-in pick
//! the method there and nowhere else. The methods import only this module (and `sms` nothing of
//! `totp`, nor `totp` of `sms`), so adding a method is a file here and an arm in `sign_in`.

pub mod sign_in;
pub mod sms;
pub mod totp;

use crate::{Ctx, Result};
use coffer_errors::{ApiError, ErrorCode};
use coffer_store::models::User;

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
pub fn method(ctx: &Ctx, user: &User) -> Result<Option<Method>> {
    if user.totp_enabled {
        return Ok(Some(Method::Totp));
    }
    Ok(sms_enabled(ctx, user)?.then_some(Method::Sms))
}

/// Whether the user signs in with SMS codes: chosen, and the number verified.
pub fn sms_enabled(ctx: &Ctx, user: &User) -> Result<bool> {
    if !user.mobile_verified || user.mobile_number.is_none() {
        return Ok(false);
    }
    ctx.with_conn(|c| Ok(coffer_store::sms_codes::is_enabled(c, &user.id)?))
}

/// Refuses to set up a method while one is on (409): one method at a time.
pub fn refuse_if_on(ctx: &Ctx, user: &User) -> Result<()> {
    if method(ctx, user)?.is_some() {
        return Err(ApiError::new(ErrorCode::EntityExists)
            .with_message("The entity exists (two-factor sign-in is on; reset it first).")
            .into());
    }
    Ok(())
}
