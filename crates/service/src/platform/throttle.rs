//! Brute-force throttling of sign-in: failed attempts are counted per account and per client
//! address in the database, so every node shares them. Past a few failures each further one is
//! answered slowly; at the limit the account or address is refused for a while (429 with
//! `Retry-After`). A successful sign-in clears the account's counter; second-factor failures
//! also count on the user's own counter, which only a correct second factor clears.
//!
//! The same table counts text messages ([`spend_sms`]), which cost money and can flood a phone:
//! per user and per number, over a window, for two-factor codes and for test messages.

use crate::{now, Ctx, Result};
use coffer_errors::{ApiError, ErrorCode};
use coffer_store::DbConn;
use std::time::Duration;

/// The throttling settings.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Failures within the window that lock the key.
    pub max_failures: i32,
    /// Failures after which each further one is answered slowly.
    pub slow_after: i32,
    /// How long failures are remembered, in seconds.
    pub window_secs: i64,
    /// How long a locked key stays locked, in seconds.
    pub lock_secs: i64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_failures: 10,
            slow_after: 3,
            window_secs: 900,
            lock_secs: 900,
        }
    }
}

/// The limits on text messages, each per user and per number within the window.
#[derive(Debug, Clone)]
pub struct SmsLimits {
    /// The window, in seconds.
    pub window_secs: i64,
    /// Two-factor codes (enrolment and sign-in) per user, and per number, in the window.
    pub codes: i32,
    /// Test messages (`PUT /rest/users/me/mobileNumber` with `testOnly`) per user, and per
    /// number, in the window.
    pub tests: i32,
}

impl Default for SmsLimits {
    fn default() -> SmsLimits {
        SmsLimits {
            window_secs: 3600,
            codes: 10,
            tests: 3,
        }
    }
}

/// The limits on password-reset requests within the window: per address asked for (whether or
/// not an account has it, so the limit tells nothing about accounts) and per client address.
#[derive(Debug, Clone)]
pub struct ResetLimits {
    /// The window, in seconds.
    pub window_secs: i64,
    /// Requests for one email address in the window.
    pub per_address: i32,
    /// Requests from one client address in the window.
    pub per_client: i32,
}

impl Default for ResetLimits {
    fn default() -> ResetLimits {
        ResetLimits {
            window_secs: 3600,
            per_address: 5,
            per_client: 20,
        }
    }
}

/// Counts a password-reset request for `email` from `client_ip`, in the caller's write
/// transaction; over a limit, 429 `ERR_REQUEST_RATE_LIMITED` with `Retry-After` (return it from
/// the transaction so that the other key's count rolls back with it).
pub fn spend_password_reset(
    c: &mut DbConn,
    limits: &ResetLimits,
    email: &str,
    client_ip: Option<&str>,
    t: i64,
) -> Result<()> {
    let mut keys = vec![(
        "this address",
        format!("pw-reset-address:{}", email.to_ascii_lowercase()),
        limits.per_address,
    )];
    if let Some(ip) = client_ip.filter(|i| !i.is_empty()) {
        keys.push((
            "this client",
            format!("pw-reset-ip:{ip}"),
            limits.per_client,
        ));
    }
    for (who, key, max) in keys {
        if let Some(start) = coffer_store::throttle::spend(c, &key, max, limits.window_secs, t)? {
            return Err(ApiError::new(ErrorCode::RequestRateLimited)
                .with_message(format!(
                    "Too many requests (at most {max} password resets for {who} in {} minutes).",
                    limits.window_secs / 60
                ))
                .with_retry_after((start + limits.window_secs - t).max(1))
                .into());
        }
    }
    Ok(())
}

/// What a text message is, for its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmsKind {
    Code,
    Test,
}

/// Counts a text message of `kind` to `number` for `user_id`, in the caller's write transaction.
/// Over a limit it answers 429 `ERR_REQUEST_RATE_LIMITED` with `Retry-After`; return that error
/// from the transaction, so that the counts already taken for the other key roll back with it.
pub fn spend_sms(
    c: &mut DbConn,
    limits: &SmsLimits,
    kind: SmsKind,
    user_id: &str,
    number: &str,
    t: i64,
) -> Result<()> {
    let (prefix, max) = match kind {
        SmsKind::Code => ("sms-code", limits.codes),
        SmsKind::Test => ("sms-test", limits.tests),
    };
    for (who, key) in [
        ("this user", format!("{prefix}-user:{user_id}")),
        ("this number", format!("{prefix}-number:{number}")),
    ] {
        if let Some(start) = coffer_store::throttle::spend(c, &key, max, limits.window_secs, t)? {
            let what = match kind {
                SmsKind::Code => "codes",
                SmsKind::Test => "test messages",
            };
            return Err(ApiError::new(ErrorCode::RequestRateLimited)
                .with_message(format!(
                    "Too many requests (at most {max} {what} to {who} in {} minutes).",
                    limits.window_secs / 60
                ))
                .with_retry_after((start + limits.window_secs - t).max(1))
                .into());
        }
    }
    Ok(())
}

/// The counter keys of an attempt: the account (when named) and the client address.
pub fn keys(account: Option<&str>, client_ip: Option<&str>) -> Vec<String> {
    let mut k = Vec::new();
    if let Some(a) = account
        .map(|a| a.trim().to_ascii_lowercase())
        .filter(|a| !a.is_empty())
    {
        k.push(format!("account:{a}"));
    }
    if let Some(ip) = client_ip.filter(|i| !i.is_empty()) {
        k.push(format!("ip:{ip}"));
    }
    k
}

/// Seconds until the first locked key opens, if any key is locked.
pub fn locked(ctx: &Ctx, keys: &[String]) -> Result<Option<i64>> {
    let t = now();
    ctx.with_conn(|c| {
        let mut wait = None;
        for k in keys {
            if let Some((_, _, Some(until))) = coffer_store::throttle::get(c, k)? {
                if until > t {
                    wait = Some(wait.map_or(until - t, |w: i64| w.max(until - t)));
                }
            }
        }
        Ok(wait)
    })
}

/// Counts a failure on every key, locking those that reach the limit; returns how long to wait
/// before answering (the slow-down).
pub fn failed(ctx: &Ctx, keys: &[String]) -> Result<Duration> {
    let limits = &ctx.config.throttle;
    let t = now();
    let worst = ctx.write(|c| {
        let mut worst = 0;
        for k in keys {
            let (failures, start) = match coffer_store::throttle::get(c, k)? {
                Some((f, start, _)) if t - start < limits.window_secs => (f + 1, start),
                _ => (1, t),
            };
            let lock = (failures >= limits.max_failures).then_some(t + limits.lock_secs);
            coffer_store::throttle::put(c, k, failures, start, lock)?;
            worst = worst.max(failures);
        }
        Ok(worst)
    })?;
    let over = (worst - limits.slow_after).max(0) as u64;
    Ok(Duration::from_millis((over * 250).min(2000)))
}

/// The counter keys of a second-factor attempt: those of a sign-in, and the user's own
/// second-factor counter, which a correct password does not clear. Without it, someone who has
/// the password could sign in again after each few wrong codes and guess codes without end.
pub fn second_factor_keys(email: &str, user_id: &str, client_ip: Option<&str>) -> Vec<String> {
    let mut k = keys(Some(email), client_ip);
    k.push(format!("second-factor:{user_id}"));
    k
}

/// A correct second factor clears the user's second-factor counter.
pub fn second_factor_succeeded(ctx: &Ctx, user_id: &str) -> Result<()> {
    let key = format!("second-factor:{user_id}");
    ctx.write(|c| Ok(coffer_store::throttle::clear(c, &key)?))
}

/// A successful sign-in clears the account's counter (the address keeps its own).
pub fn succeeded(ctx: &Ctx, account: &str) -> Result<()> {
    let key = format!("account:{}", account.trim().to_ascii_lowercase());
    ctx.write(|c| Ok(coffer_store::throttle::clear(c, &key)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_after_the_limit_and_slows_before() {
        let (_d, mut ctx) = crate::test_support::ctx();
        ctx.config.throttle = Limits {
            max_failures: 4,
            slow_after: 2,
            window_secs: 60,
            lock_secs: 30,
        };
        let k = keys(Some("Ann@Example.com"), Some("10.0.0.1"));
        assert_eq!(k, vec!["account:ann@example.com", "ip:10.0.0.1"]);
        assert_eq!(failed(&ctx, &k).unwrap(), Duration::ZERO);
        assert_eq!(failed(&ctx, &k).unwrap(), Duration::ZERO);
        assert_eq!(failed(&ctx, &k).unwrap(), Duration::from_millis(250));
        assert_eq!(locked(&ctx, &k).unwrap(), None);
        failed(&ctx, &k).unwrap();
        let wait = locked(&ctx, &k).unwrap().unwrap();
        assert!((29..=30).contains(&wait), "{wait}");
        succeeded(&ctx, "ann@example.com").unwrap();
        // The address stays locked after the account's counter is cleared.
        assert!(locked(&ctx, &k).unwrap().is_some());
        assert!(locked(&ctx, &keys(Some("ann@example.com"), None))
            .unwrap()
            .is_none());
    }

    #[test]
    fn text_messages_are_limited_per_user_and_per_number() {
        let (_d, ctx) = crate::test_support::ctx();
        let limits = SmsLimits {
            window_secs: 60,
            codes: 2,
            tests: 1,
        };
        let send = |kind, user: &str, number: &str, t: i64| {
            ctx.write(|c| spend_sms(c, &limits, kind, user, number, t))
                .map_err(|e| e.to_api())
        };
        let t = 1_000;
        assert!(send(SmsKind::Code, "u-1", "+41790000001", t).is_ok());
        assert!(send(SmsKind::Code, "u-1", "+41790000002", t).is_ok());
        // The user is at the limit, whatever the number.
        let e = send(SmsKind::Code, "u-1", "+41790000003", t + 10).unwrap_err();
        assert_eq!(e.code, ErrorCode::RequestRateLimited);
        assert_eq!(e.retry_after, Some(50));
        // The refusal took nothing from the new number: other users may still text it twice.
        assert!(send(SmsKind::Code, "u-2", "+41790000003", t).is_ok());
        assert!(send(SmsKind::Code, "u-3", "+41790000003", t).is_ok());
        // The number is at the limit, whoever asks.
        let e = send(SmsKind::Code, "u-4", "+41790000003", t).unwrap_err();
        assert_eq!(e.code, ErrorCode::RequestRateLimited);
        // That refusal rolled back what it had counted for the user.
        assert!(send(SmsKind::Code, "u-4", "+41790000004", t).is_ok());
        assert!(send(SmsKind::Code, "u-4", "+41790000005", t).is_ok());
        // Tests count apart from codes.
        assert!(send(SmsKind::Test, "u-1", "+41790000009", t).is_ok());
        assert!(send(SmsKind::Test, "u-1", "+41790000008", t).is_err());
        assert!(send(SmsKind::Test, "u-5", "+41790000009", t).is_err());
        // A new window starts when the old one is over.
        assert!(send(SmsKind::Code, "u-1", "+41790000001", t + 60).is_ok());
    }

    #[test]
    fn a_correct_password_does_not_clear_second_factor_failures() {
        let (_d, mut ctx) = crate::test_support::ctx();
        ctx.config.throttle = Limits {
            max_failures: 3,
            slow_after: 3,
            window_secs: 60,
            lock_secs: 30,
        };
        let k = second_factor_keys("ann@example.com", "u-1", None);
        for _ in 0..2 {
            failed(&ctx, &k).unwrap();
            // Signing in again with the right password clears only the account's counter.
            succeeded(&ctx, "ann@example.com").unwrap();
        }
        failed(&ctx, &k).unwrap();
        assert!(locked(&ctx, &k).unwrap().is_some());
        // Only a correct second factor clears it (once the lock is over).
        second_factor_succeeded(&ctx, "u-1").unwrap();
        succeeded(&ctx, "ann@example.com").unwrap();
        assert!(locked(&ctx, &k).unwrap().is_none());
    }
}
