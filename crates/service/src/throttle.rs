//! Brute-force throttling of sign-in: failed attempts are counted per account and per client
//! address in the database, so every node shares them. Past a few failures each further one is
//! answered slowly; at the limit the account or address is refused for a while (429 with
//! `Retry-After`). A successful sign-in clears the account's counter.

use crate::{now, Ctx, Result};
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
}
