//! Webhook management (interface §4.17): a webhook belongs to the user who created it, and a
//! user sees and changes only their own. Refusals carry the HTTP status and the detail that the
//! webhook envelope shows as `[Status Text] detail`.

use crate::platform::auth::Caller;
use crate::platform::events;
use crate::{now, rfc3339, Ctx, Result};
use coffer_domain::subject::SubjectPattern;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::Webhook;
use serde::Serialize;
use utoipa::ToSchema;

/// Most subscriptions one webhook may have.
pub const MAX_SUBSCRIPTIONS: usize = 100;
const MAX_URL: usize = 2048;
const MAX_SECRET: usize = 1024;
/// Default and largest page of `GET /webhooks`.
pub const DEFAULT_LIMIT: i64 = 100;
pub const MAX_LIMIT: i64 = 1000;

/// A refusal in the webhook envelope: the status and the detail.
pub fn refusal(status: u16, detail: impl Into<String>) -> Error {
    let code = match status {
        404 => ErrorCode::EntityNotFound,
        409 => ErrorCode::EntityExists,
        _ => ErrorCode::InvalidParameter,
    };
    ApiError::new(code)
        .with_status(status)
        .with_message(detail.into())
        .into()
}

/// A webhook as clients read it. The secret and the token are write-only.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookView {
    pub id: String,
    pub url: String,
    pub enabled: bool,
    pub created_at: String,
    pub updated_at: String,
    pub subscriptions: Vec<String>,
    /// `UNKNOWN` until the first delivery, then `SUCCESS` or `ERROR`.
    pub status: String,
    /// The outcome of the last delivery.
    pub description: String,
    /// Whether a token is sent to the receiver.
    pub has_token: bool,
    /// The version, also sent as the `ETag`.
    #[serde(skip)]
    pub version: i64,
}

impl WebhookView {
    fn from_row(w: &Webhook) -> WebhookView {
        WebhookView {
            id: w.id.clone(),
            url: w.url.clone(),
            enabled: w.enabled,
            created_at: rfc3339(w.created_at),
            updated_at: rfc3339(w.updated_at),
            subscriptions: serde_json::from_str(&w.subscriptions).unwrap_or_default(),
            status: w.status.clone(),
            description: w.description.clone(),
            has_token: w.token.is_some(),
            version: w.version,
        }
    }
}

/// The fields of a create, a replace (PUT) or a partial update (PATCH).
#[derive(Debug, Clone, Default)]
pub struct WebhookInput {
    pub url: Option<String>,
    /// `Some(None)`: not given; on PUT the token is then removed.
    pub token: Option<String>,
    pub secret: Option<String>,
    pub enabled: Option<bool>,
    pub subscriptions: Option<Vec<String>>,
}

/// An absolute http(s) URL without credentials.
fn check_url(url: &str) -> Result<String> {
    if url.len() > MAX_URL {
        return Err(refusal(
            400,
            format!("webhook.url must be at most {MAX_URL} characters"),
        ));
    }
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(refusal(
            400,
            "webhook.url must not contain spaces or control characters",
        ));
    }
    let parsed = url::Url::parse(url)
        .map_err(|e| refusal(400, format!("webhook.url is not a valid URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(refusal(
            400,
            format!(
                "webhook.url must use http or https, not {}",
                parsed.scheme()
            ),
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(refusal(400, "webhook.url must name a host"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(refusal(400, "webhook.url must not contain credentials"));
    }
    if parsed.fragment().is_some() {
        return Err(refusal(400, "webhook.url must not contain a fragment"));
    }
    Ok(parsed.to_string())
}

fn check_secret(secret: &str) -> Result<()> {
    if secret.trim().is_empty() {
        return Err(refusal(400, "webhook.secret must not be empty"));
    }
    if secret.len() > MAX_SECRET {
        return Err(refusal(
            400,
            format!("webhook.secret must be at most {MAX_SECRET} characters"),
        ));
    }
    Ok(())
}

fn check_token(token: &str) -> Result<()> {
    if token.trim().is_empty() {
        return Err(refusal(
            400,
            "webhook.token must not be empty or whitespace-only",
        ));
    }
    if token.len() > MAX_SECRET || token.chars().any(char::is_control) {
        return Err(refusal(
            400,
            format!("webhook.token must be at most {MAX_SECRET} printable characters"),
        ));
    }
    Ok(())
}

/// Parses the subscriptions and refuses overlapping ones; returns them as stored (JSON).
fn check_subscriptions(subs: &[String]) -> Result<String> {
    if subs.is_empty() {
        return Err(refusal(400, "webhook.subscriptions must not be empty"));
    }
    if subs.len() > MAX_SUBSCRIPTIONS {
        return Err(refusal(
            400,
            format!("webhook.subscriptions may hold at most {MAX_SUBSCRIPTIONS} patterns"),
        ));
    }
    let patterns = subs
        .iter()
        .map(|s| {
            SubjectPattern::parse(s).map_err(|e| {
                refusal(
                    400,
                    format!("invalid subscription \"{}\": {e}", truncate(s)),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if let Some((i, j)) = SubjectPattern::first_overlap(&patterns) {
        return Err(refusal(
            400,
            format!(
                "subscriptions \"{}\" and \"{}\" overlap",
                patterns[i].as_str(),
                patterns[j].as_str()
            ),
        ));
    }
    serde_json::to_string(subs).map_err(Error::internal)
}

/// Cuts a client's value for an error message.
fn truncate(s: &str) -> String {
    if s.chars().count() > 64 {
        format!("{}…", s.chars().take(64).collect::<String>())
    } else {
        s.to_string()
    }
}

fn missing(field: &str) -> Error {
    refusal(400, format!("webhook.{field} must be provided"))
}

fn required<T>(v: Option<T>, field: &str) -> Result<T> {
    v.ok_or_else(|| missing(field))
}

pub fn create(ctx: &Ctx, caller: &Caller, input: WebhookInput) -> Result<WebhookView> {
    let url = check_url(&required(input.url, "url")?)?;
    let secret = required(input.secret, "secret")?;
    check_secret(&secret)?;
    let subscriptions = check_subscriptions(&required(input.subscriptions, "subscriptions")?)?;
    if let Some(t) = &input.token {
        check_token(t)?;
    }
    let t = now();
    let row = Webhook {
        // Time-ordered, so that listing by id is listing in the order of creation.
        id: uuid::Uuid::now_v7().to_string(),
        owner_id: caller.user.id.clone(),
        url,
        token: input.token,
        secret,
        enabled: input.enabled.unwrap_or(true),
        subscriptions,
        status: "UNKNOWN".into(),
        description: "unknown".into(),
        version: 1,
        created_at: t,
        updated_at: t,
    };
    ctx.write(|c| {
        coffer_store::webhooks::insert(c, &row)?;
        events::record(
            c,
            "webhook.webhook.create",
            Some(&caller.user.id),
            serde_json::json!({"id": row.id, "userId": caller.user.id}),
        )
    })?;
    Ok(WebhookView::from_row(&row))
}

fn not_found() -> Error {
    refusal(404, "webhook not found")
}

pub fn get(ctx: &Ctx, caller: &Caller, id: &str) -> Result<WebhookView> {
    let w = ctx
        .with_conn(|c| Ok(coffer_store::webhooks::by_id(c, &caller.user.id, id)?))?
        .ok_or_else(not_found)?;
    Ok(WebhookView::from_row(&w))
}

/// The caller's webhooks and how many there are.
pub fn list(
    ctx: &Ctx,
    caller: &Caller,
    offset: i64,
    limit: i64,
) -> Result<(Vec<WebhookView>, i64)> {
    let page = ctx.with_conn(|c| {
        Ok(coffer_store::webhooks::list(
            c,
            &caller.user.id,
            offset,
            limit,
        )?)
    })?;
    Ok((
        page.items.iter().map(WebhookView::from_row).collect(),
        page.total,
    ))
}

/// How an update treats absent fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateKind {
    /// PUT: `url`, `secret` and `subscriptions` are required; an absent token is removed and an
    /// absent `enabled` means true.
    Replace,
    /// PATCH: only the given fields change.
    Patch,
}

/// Updates a webhook. `if_match` is the version the client read (from the `ETag`); the update
/// is refused with 409 when the webhook changed since, checked again inside the update itself.
pub fn update(
    ctx: &Ctx,
    caller: &Caller,
    id: &str,
    input: WebhookInput,
    kind: UpdateKind,
    if_match: Option<i64>,
) -> Result<WebhookView> {
    let url = match (&input.url, kind) {
        (Some(u), _) => Some(check_url(u)?),
        (None, UpdateKind::Replace) => return Err(missing("url")),
        (None, UpdateKind::Patch) => None,
    };
    let secret = match (input.secret, kind) {
        (Some(s), _) => {
            check_secret(&s)?;
            Some(s)
        }
        (None, UpdateKind::Replace) => return Err(missing("secret")),
        (None, UpdateKind::Patch) => None,
    };
    let subscriptions = match (&input.subscriptions, kind) {
        (Some(s), _) => Some(check_subscriptions(s)?),
        (None, UpdateKind::Replace) => return Err(missing("subscriptions")),
        (None, UpdateKind::Patch) => None,
    };
    if let Some(t) = &input.token {
        check_token(t)?;
    }
    let row = ctx.write(|c| {
        let mut w = coffer_store::webhooks::by_id(c, &caller.user.id, id)?.ok_or_else(not_found)?;
        if if_match.is_some_and(|v| v != w.version) {
            return Err(refusal(
                409,
                "webhook instance has been changed since update",
            ));
        }
        let read_version = w.version;
        if let Some(u) = url {
            w.url = u;
        }
        if let Some(s) = secret {
            w.secret = s;
        }
        if let Some(s) = subscriptions {
            w.subscriptions = s;
        }
        match kind {
            UpdateKind::Replace => {
                w.token = input.token.clone();
                w.enabled = input.enabled.unwrap_or(true);
            }
            UpdateKind::Patch => {
                if let Some(t) = &input.token {
                    w.token = Some(t.clone());
                }
                if let Some(e) = input.enabled {
                    w.enabled = e;
                }
            }
        }
        w.version = read_version + 1;
        w.updated_at = now();
        if coffer_store::webhooks::update_if_version(c, &w, read_version)? == 0 {
            return Err(refusal(
                409,
                "webhook instance has been changed since update",
            ));
        }
        events::record(
            c,
            "webhook.webhook.update",
            Some(&caller.user.id),
            serde_json::json!({"id": w.id, "userId": caller.user.id}),
        )?;
        Ok(w)
    })?;
    Ok(WebhookView::from_row(&row))
}

pub fn delete(ctx: &Ctx, caller: &Caller, id: &str) -> Result<()> {
    ctx.write(|c| {
        if coffer_store::webhooks::delete(c, &caller.user.id, id)? == 0 {
            return Err(not_found());
        }
        events::record(
            c,
            "webhook.webhook.delete",
            Some(&caller.user.id),
            serde_json::json!({"id": id, "userId": caller.user.id}),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detail(e: Error) -> (u16, String) {
        let a = e.to_api();
        (a.status, a.message.into_owned())
    }

    #[test]
    fn hostile_urls_are_refused_with_the_reason() {
        for (url, why) in [
            ("ftp://example.com/hook", "http or https"),
            ("javascript:alert(1)", "http or https"),
            ("https://user:pw@example.com/hook", "credentials"),
            ("https://example.com/a b", "spaces"),
            ("not-a-url", "not a valid URL"),
            ("https://example.com/#frag", "fragment"),
        ] {
            let (status, msg) = detail(check_url(url).unwrap_err());
            assert_eq!(status, 400);
            assert!(msg.contains(why), "{url}: {msg}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL));
        assert!(detail(check_url(&long).unwrap_err()).1.contains("at most"));
        assert_eq!(
            check_url("https://hooks.example.com/in?x=1").unwrap(),
            "https://hooks.example.com/in?x=1"
        );
    }

    #[test]
    fn subscriptions_are_checked_whole() {
        assert!(detail(check_subscriptions(&[]).unwrap_err())
            .1
            .contains("must not be empty"));
        let many: Vec<String> = (0..=MAX_SUBSCRIPTIONS).map(|i| format!("a.s{i}")).collect();
        assert!(detail(check_subscriptions(&many).unwrap_err())
            .1
            .contains("at most"));
        let msg = detail(check_subscriptions(&["a.*.c".into(), "a.b.*".into()]).unwrap_err()).1;
        assert_eq!(msg, "subscriptions \"a.*.c\" and \"a.b.*\" overlap");
        assert!(detail(check_subscriptions(&["a.b*".into()]).unwrap_err())
            .1
            .starts_with("invalid subscription \"a.b*\""));
        assert!(check_subscriptions(&["a.>".into(), "a".into()]).is_ok());
    }

    #[test]
    fn tokens_and_secrets() {
        assert!(detail(check_token("   ").unwrap_err())
            .1
            .contains("whitespace"));
        assert!(check_token("t").is_ok());
        assert!(detail(check_secret("").unwrap_err()).1.contains("secret"));
    }
}

/// One delivery with its attempts (the delivery log).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryView {
    /// The `webhook-id` of every attempt.
    pub id: String,
    pub event_id: String,
    pub subject: String,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    pub attempts: i32,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub created_at: String,
    pub attempt_log: Vec<AttemptView>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptView {
    pub attempt: i32,
    pub status_code: Option<i32>,
    pub duration_ms: i64,
    pub error: Option<String>,
    pub at: String,
}

/// A webhook's deliveries, newest first, with their attempts.
pub fn deliveries(
    ctx: &Ctx,
    caller: &Caller,
    id: &str,
    offset: i64,
    limit: i64,
) -> Result<(Vec<DeliveryView>, i64)> {
    ctx.read(|c| {
        coffer_store::webhooks::by_id(c, &caller.user.id, id)?.ok_or_else(not_found)?;
        let (items, total) = coffer_store::deliveries::for_webhook(c, id, offset, limit)?;
        let ids: Vec<String> = items.iter().map(|d| d.id.clone()).collect();
        let attempts = coffer_store::deliveries::attempts(c, &ids)?;
        let views = items
            .into_iter()
            .map(|d| DeliveryView {
                attempt_log: attempts
                    .iter()
                    .filter(|a| a.delivery_id == d.id)
                    .map(|a| AttemptView {
                        attempt: a.attempt,
                        status_code: a.status_code,
                        duration_ms: a.duration_ms,
                        error: a.error.clone(),
                        at: rfc3339(a.created_at),
                    })
                    .collect(),
                id: d.id,
                event_id: d.event_id,
                subject: d.subject,
                state: d.state,
                attempts: d.attempts,
                last_status: d.last_status,
                last_error: d.last_error,
                created_at: rfc3339(d.created_at),
            })
            .collect();
        Ok((views, total))
    })
}

fn now_ms() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// Delivers a delivery again now, with the same `webhook-id`.
pub fn redeliver(ctx: &Ctx, caller: &Caller, id: &str, delivery_id: &str) -> Result<()> {
    ctx.write(|c| {
        let w = coffer_store::webhooks::by_id(c, &caller.user.id, id)?.ok_or_else(not_found)?;
        let d = coffer_store::deliveries::by_id(c, delivery_id)?
            .filter(|d| d.webhook_id == w.id)
            .ok_or_else(|| refusal(404, "delivery not found"))?;
        if !w.enabled {
            return Err(refusal(
                409,
                "the webhook is disabled; enable it before redelivering",
            ));
        }
        coffer_store::deliveries::make_due(c, &d.id, now_ms())?;
        events::record(
            c,
            "webhook.delivery.redeliver",
            Some(&caller.user.id),
            serde_json::json!({"id": w.id, "deliveryId": d.id, "userId": caller.user.id}),
        )
    })
}

/// Sends a `webhook.webhook.ping` event to this webhook only; returns the delivery id.
pub fn ping(ctx: &Ctx, caller: &Caller, id: &str) -> Result<String> {
    ctx.write(|c| {
        let w = coffer_store::webhooks::by_id(c, &caller.user.id, id)?.ok_or_else(not_found)?;
        if !w.enabled {
            return Err(refusal(
                409,
                "the webhook is disabled; enable it before pinging",
            ));
        }
        let t = now();
        let event_id = uuid::Uuid::new_v4().to_string();
        let delivery = coffer_store::models::Delivery {
            id: format!("msg_{}", uuid::Uuid::new_v4().simple()),
            webhook_id: w.id.clone(),
            event_id: event_id.clone(),
            subject: "webhook.webhook.ping".into(),
            payload: serde_json::json!({
                "id": event_id, "subject": "webhook.webhook.ping", "createdAt": rfc3339(t),
                "actor": caller.user.id, "data": {"id": w.id},
            })
            .to_string(),
            state: "pending".into(),
            attempts: 0,
            next_attempt_at: now_ms(),
            lease_until: None,
            last_status: None,
            last_error: None,
            created_at: t,
            updated_at: t,
        };
        coffer_store::deliveries::insert(c, std::slice::from_ref(&delivery))?;
        Ok(delivery.id)
    })
}
