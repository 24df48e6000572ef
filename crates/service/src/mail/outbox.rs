//! The mail outbox as an operator sees it (`cofferd mail outbox`), and the periodic expiry of
//! queued messages whose link or code stopped working, so that no live secret waits in the
//! outbox even when no relay sends it. Sending itself is `coffer_delivery::mail`'s; what the
//! outbox keeps of a message is `coffer_store::mail`'s.

use crate::content::jobs::Kind;
use crate::{now, Ctx, Result};
use coffer_errors::{ApiError, ErrorCode};
use coffer_store::mail::OutboxMail;

/// The states a message of the outbox can be in.
pub const STATES: &[&str] = &["queued", "sent", "error", "expired"];

/// How far back a listing without a state reaches for messages that are finished.
pub const RECENT_SECS: i64 = 24 * 3600;

pub const EXPIRE: &str = "expire-outgoing-mail";

/// The job kinds of the outbox, registered where the worker starts. Every five minutes: no
/// sender ever sends an expired message, so this only bounds how long its body waits (the
/// sender, when a relay is configured, also expires messages every minute).
pub const JOBS: &[Kind] = &[Kind {
    name: EXPIRE,
    period: Some(300),
    run: |ctx, _| Box::pin(async move { expire(ctx).await.map(drop) }),
}];

/// Marks the queued messages whose link or code expired `expired` and erases their bodies;
/// returns how many.
pub async fn expire(ctx: &Ctx) -> Result<usize> {
    ctx.write_owned(|c| Ok(coffer_store::mail::expire(c, now())?))
        .await
}

/// A message as the operator's listing shows it: never its body.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Entry {
    pub id: String,
    pub to: String,
    pub subject: String,
    pub state: String,
    pub attempts: i32,
    /// Unix seconds, as every time below.
    pub created_at: i64,
    /// When a queued message is tried next.
    pub next_attempt_at: Option<i64>,
    pub sent_at: Option<i64>,
    pub expires_at: Option<i64>,
    pub last_error: Option<String>,
}

impl From<OutboxMail> for Entry {
    fn from(m: OutboxMail) -> Entry {
        Entry {
            next_attempt_at: (m.state == "queued").then(|| m.next_attempt_at.div_euclid(1000)),
            id: m.id,
            to: m.to_address,
            subject: m.subject,
            state: m.state,
            attempts: m.attempts,
            created_at: m.created_at,
            sent_at: m.sent_at,
            expires_at: m.expires_at,
            last_error: m.last_error,
        }
    }
}

/// The newest messages, `limit` at most: of one state when `state` is given, else those still
/// queued or failed, whatever their age, and those written in the last [`RECENT_SECS`]. An
/// unknown state is 422 `ERR_INVALID_PARAMETER`.
pub fn list(ctx: &Ctx, state: Option<&str>, limit: i64) -> Result<Vec<Entry>> {
    if let Some(s) = state.filter(|s| !STATES.contains(s)) {
        return Err(ApiError::field(ErrorCode::InvalidParameter, "state")
            .with_message(format!(
                "Unknown state `{s}`: use one of {}.",
                STATES.join(", ")
            ))
            .into());
    }
    let filter = coffer_store::mail::ListFilter {
        state: state.map(str::to_string),
        recent_since: now() - RECENT_SECS,
        limit: limit.clamp(1, 10_000),
    };
    let rows = ctx.with_conn(|c| Ok(coffer_store::mail::list(c, &filter)?))?;
    Ok(rows.into_iter().map(Entry::from).collect())
}
