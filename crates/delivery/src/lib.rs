//! Webhook delivery: fans the event outbox out into deliveries, and delivers them in background
//! workers with a bounded number of requests in flight, signed (see [`sign`]), retried on a
//! schedule, at least once. It never runs inside an API request.
//!
//! - Fan-out takes the events not yet dispatched, makes one delivery per enabled webhook that
//!   subscribes to the subject and whose owner may see the event, and marks them dispatched, all
//!   in one transaction.
//! - A pump claims due deliveries with a lease and hands them to sender threads; each attempt's
//!   outcome is written with the delivery's next state and the webhook's status.
//! - On PostgreSQL both steps lock rows with `SKIP LOCKED`, so many nodes share the work; a node
//!   that dies mid-delivery leaves a lease that runs out, and another node delivers again with
//!   the same `webhook-id`.
//! - An idle pump sleeps until an event is recorded on any node (`coffer_store::wake`), a
//!   sender finishes, the earliest retry falls due, or [`Config::poll`] passes. Woken within
//!   [`GATHER`] of its last look, it waits for the rest of it first, so that a burst of events
//!   costs one look, not one per event.
//!
//! Outbound mail ([`mail`]) is sent the same way: claimed with a lease, retried with backoff.

pub mod guard;
pub mod mail;
pub mod sign;

use coffer_domain::{Subject, SubjectPattern};
use coffer_store::deliveries::{self, Outcome};
use coffer_store::models::{Delivery, Event, Webhook};
use coffer_store::wake::Work;
use coffer_store::{Db, StoreError};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often an idle pump looks for work on its own, by default: events wake it, so this only
/// bounds how long a missed wake-up can delay a delivery.
pub const IDLE_POLL: Duration = Duration::from_secs(5);

/// Events fanned out by one look at most.
const FAN_OUT_BATCH: i64 = 500;

/// The shortest time from one look to the next when an announcement wakes the pump: events
/// recorded in a burst (one per file of many small uploads, say) are fanned out by one look,
/// two write transactions, instead of one look each, while an event after a quiet moment is
/// still looked at as soon as it is announced. It bounds what a burst adds to a delivery's
/// latency.
pub const GATHER: Duration = Duration::from_millis(20);

/// Delivery settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Deliver to loopback, private and link-local addresses (`COFFER_WEBHOOK_ALLOW_PRIVATE`).
    pub allow_private: bool,
    /// How long one request may take.
    pub timeout: Duration,
    /// The delays before each retry; when they are used up the webhook is disabled.
    pub schedule: Vec<Duration>,
    /// How often the pump looks for work on its own when it found none. New events wake it at
    /// once (see `coffer_store::wake`), and it wakes when the earliest retry falls due.
    pub poll: Duration,
    /// Requests in flight at most.
    pub workers: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            allow_private: false,
            timeout: Duration::from_secs(15),
            schedule: parse_schedule("5s,5m,30m,2h,5h,10h,10h")
                .expect("the default schedule parses"),
            poll: IDLE_POLL,
            workers: 32,
        }
    }
}

/// Parses a retry schedule: comma-separated durations with a unit (`ms`, `s`, `m`, `h`).
pub fn parse_schedule(s: &str) -> Result<Vec<Duration>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let split = p
                .find(|c: char| !c.is_ascii_digit())
                .ok_or_else(|| format!("`{p}` needs a unit (ms, s, m, h)"))?;
            let (n, unit) = p.split_at(split);
            let n: u64 = n.parse().map_err(|_| format!("`{p}` is not a duration"))?;
            Ok(match unit {
                "ms" => Duration::from_millis(n),
                "s" => Duration::from_secs(n),
                "m" => Duration::from_secs(n * 60),
                "h" => Duration::from_secs(n * 3600),
                _ => return Err(format!("`{p}`: the unit must be ms, s, m or h")),
            })
        })
        .collect()
}

fn now_ms() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64 / 1_000_000
}

/// The body of a delivery: `{id, subject, createdAt, actor, data}`.
pub fn payload(e: &Event) -> String {
    let created = time::OffsetDateTime::from_unix_timestamp(e.created_at)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default();
    let data: serde_json::Value = serde_json::from_str(&e.data).unwrap_or(serde_json::Value::Null);
    serde_json::json!({"id": e.id, "subject": e.subject, "createdAt": created, "actor": e.actor_id, "data": data}).to_string()
}

/// Whether the owner of a webhook may see an event: their own activity, an event about them
/// (`data.userId`) or about content in their tree (`data.ownerId`: folders, files, versions,
/// members and comments name the owner of the tree they happened in), or anything for a system
/// administrator.
pub fn visible(e: &Event, owner_id: &str, owner_role: &str) -> bool {
    if owner_role == "system-admin" || e.actor_id.as_deref() == Some(owner_id) {
        return true;
    }
    let data: serde_json::Value = serde_json::from_str(&e.data).unwrap_or_default();
    ["userId", "ownerId"]
        .iter()
        .any(|k| data.get(*k).and_then(|v| v.as_str()) == Some(owner_id))
}

fn subscribed(w: &Webhook, subject: &Subject) -> bool {
    serde_json::from_str::<Vec<String>>(&w.subscriptions)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| SubjectPattern::parse(p).ok())
        .any(|p| p.matches(subject))
}

/// Fans out up to `limit` events; returns how many were dispatched.
pub fn fan_out(db: &Db, limit: i64) -> Result<usize, StoreError> {
    db.write(|c| {
        let events = deliveries::pending_events(c, limit)?;
        if events.is_empty() {
            return Ok(0);
        }
        let hooks = deliveries::enabled_webhooks(c)?;
        let now = now_ms();
        let mut made = Vec::new();
        for e in &events {
            let Ok(subject) = Subject::parse(&e.subject) else {
                continue;
            };
            for (w, role) in &hooks {
                if subscribed(w, &subject) && visible(e, &w.owner_id, role) {
                    made.push(Delivery {
                        id: format!("msg_{}", uuid::Uuid::new_v4().simple()),
                        webhook_id: w.id.clone(),
                        event_id: e.id.clone(),
                        subject: e.subject.clone(),
                        payload: payload(e),
                        state: "pending".into(),
                        attempts: 0,
                        next_attempt_at: now,
                        lease_until: None,
                        last_status: None,
                        last_error: None,
                        created_at: now / 1000,
                        updated_at: now / 1000,
                    });
                }
            }
        }
        deliveries::insert(c, &made)?;
        let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
        deliveries::mark_dispatched(c, &seqs)?;
        Ok(events.len())
    })
}

/// What one attempt came to: an HTTP status, or an error before any status.
pub type Attempted = Result<u16, String>;

/// The delivery's next state after attempt number `attempt` (1-based).
pub fn decide(
    d: &Delivery,
    webhook_id: &str,
    attempt: i32,
    result: &Attempted,
    duration_ms: i64,
    schedule: &[Duration],
    now: i64,
) -> Outcome {
    let base = |state, next, status, description: String, disable| Outcome {
        delivery_id: d.id.clone(),
        webhook_id: webhook_id.to_string(),
        attempt,
        status_code: result.as_ref().ok().map(|s| i32::from(*s)),
        duration_ms,
        error: result.as_ref().err().cloned(),
        state,
        next_attempt_at: next,
        webhook_status: status,
        webhook_description: description,
        disable,
        now: now / 1000,
    };
    let reason = match result {
        Ok(s) if (200..300).contains(s) => {
            return base(
                "delivered",
                now,
                "SUCCESS",
                format!("delivered {} (HTTP {s})", d.subject),
                false,
            )
        }
        Ok(410) => {
            return base(
                "failed",
                now,
                "ERROR",
                "the receiver answered HTTP 410 Gone; the webhook is disabled".into(),
                true,
            )
        }
        Ok(s) => format!("HTTP {s}"),
        Err(e) => e.clone(),
    };
    match schedule.get(attempt as usize - 1) {
        Some(delay) => {
            let next = now + delay.as_millis() as i64;
            base(
                "pending",
                next,
                "ERROR",
                format!("{reason}; retry {attempt} of {} scheduled", schedule.len()),
                false,
            )
        }
        None => base(
            "failed",
            now,
            "ERROR",
            format!("{reason}; retries exhausted, the webhook is disabled"),
            true,
        ),
    }
}

/// Sends one delivery and returns the outcome.
fn send(agent: &ureq::Agent, d: &Delivery, w: &Webhook) -> (Attempted, i64) {
    let ts = now_ms() / 1000;
    let mut req = agent
        .post(&w.url)
        .set("Content-Type", "application/json")
        .set("User-Agent", "Coffer-Webhooks")
        .set("webhook-id", &d.id)
        .set("webhook-timestamp", &ts.to_string())
        .set(
            "webhook-signature",
            &sign::standard(&w.secret, &d.id, ts, &d.payload),
        )
        .set("X-Coffer-Signature", &sign::coffer(&w.secret, &d.payload));
    if let Some(t) = &w.token {
        req = req.set("Authorization", &format!("Bearer {t}"));
    }
    let started = Instant::now();
    let result = match req.send_string(&d.payload) {
        Ok(r) if (300..400).contains(&r.status()) => {
            Err(format!("HTTP {} (redirects are not followed)", r.status()))
        }
        Ok(r) => Ok(drain(r)),
        Err(ureq::Error::Status(_, r)) => Ok(drain(r)),
        Err(ureq::Error::Transport(t)) => Err(transport_message(&t)),
    };
    (result, started.elapsed().as_millis() as i64)
}

/// Reads (a bounded part of) the answer, which returns the connection to the client's pool for
/// the next delivery; returns the status.
fn drain(r: ureq::Response) -> u16 {
    use std::io::Read;
    let status = r.status();
    let _ = std::io::copy(&mut r.into_reader().take(64 * 1024), &mut std::io::sink());
    status
}

/// A transport error as the webhook's description shows it: the cause, without the URL (which
/// the owner knows) repeated.
fn transport_message(t: &ureq::Transport) -> String {
    let mut text = t.kind().to_string();
    if let Some(m) = t.message() {
        text = format!("{text}: {m}");
    }
    // The cause carries the reason that matters (e.g. the address guard's refusal).
    if let Some(cause) = std::error::Error::source(t) {
        text = format!("{text}: {cause}");
    }
    text
}

/// The running delivery workers; dropping the handle stops them.
pub struct Workers {
    stop: Arc<AtomicBool>,
    db: Db,
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // The pump may be waiting for work: it ends now rather than at its next look.
        self.db.wake(Work::Deliveries);
    }
}

/// Starts the pump and the sender threads.
pub fn spawn(db: Db, config: Config) -> std::io::Result<Workers> {
    let stop = Arc::new(AtomicBool::new(false));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel::<(Delivery, Webhook)>();
    let rx = Arc::new(Mutex::new(rx));
    let workers = config.workers.max(1);
    for i in 0..workers {
        let (db, rx, in_flight, config) =
            (db.clone(), rx.clone(), in_flight.clone(), config.clone());
        std::thread::Builder::new()
            .name(format!("coffer-webhook-{i}"))
            .spawn(move || {
                let agent = ureq::AgentBuilder::new()
                    .timeout(config.timeout)
                    .redirects(0)
                    .resolver(guard::Guard {
                        allow_private: config.allow_private,
                    })
                    .build();
                loop {
                    let job = rx
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .recv();
                    let Ok((d, w)) = job else { break };
                    deliver(&db, &agent, &config, &d, &w);
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    // A pump waiting for a free worker claims again at once.
                    db.wake(Work::Deliveries);
                }
            })?;
    }
    let pump_stop = stop.clone();
    let own_db = db.clone();
    std::thread::Builder::new()
        .name("coffer-webhook-pump".into())
        .spawn(move || {
            // Longer than any request may take, so a live node never loses its claim.
            let lease_ms = (config.timeout * 2 + Duration::from_secs(1)).as_millis() as i64;
            // Made before the first look, so that no event recorded after it goes unnoticed.
            let mut waiter = db.waiter(Work::Deliveries);
            while !pump_stop.load(Ordering::SeqCst) {
                let looked = Instant::now();
                let fanned = fan_out(&db, FAN_OUT_BATCH).unwrap_or_else(|e| {
                    log::warn!("webhook fan-out failed: {e}");
                    0
                });
                let free = workers.saturating_sub(in_flight.load(Ordering::SeqCst));
                let mut claimed = 0;
                if free > 0 {
                    match db.write(|c| deliveries::claim_due(c, now_ms(), lease_ms, free as i64)) {
                        Ok(jobs) => {
                            claimed = jobs.len();
                            for job in jobs {
                                in_flight.fetch_add(1, Ordering::SeqCst);
                                if tx.send(job).is_err() {
                                    return;
                                }
                            }
                        }
                        Err(e) => log::warn!("claiming webhook deliveries failed: {e}"),
                    }
                }
                // More may wait only behind a full look: events past the batch, or due
                // deliveries past the free workers. Otherwise the next look waits, and a look
                // that found nothing more would cost two write transactions for nothing.
                let more = fanned as i64 >= FAN_OUT_BATCH || (claimed > 0 && claimed >= free);
                if !more {
                    // Wait for an event, a free worker, the next retry, or the next look of
                    // our own.
                    let idle = if free > 0 {
                        until_due(&db, config.poll)
                    } else {
                        config.poll
                    };
                    // Woken while workers are free (by an event, most likely): what else is
                    // recorded within GATHER of the last look waits for the same next look.
                    // Waiting for a free worker gathers nothing, so that a busy pump claims as
                    // soon as one finishes.
                    if waiter.wait(idle) && free > 0 {
                        if let Some(rest) = GATHER.checked_sub(looked.elapsed()) {
                            std::thread::sleep(rest);
                        }
                    }
                }
            }
        })?;
    Ok(Workers { stop, db: own_db })
}

/// How long the pump may sleep: until the earliest pending delivery falls due, `poll` at most.
fn until_due(db: &Db, poll: Duration) -> Duration {
    let now = now_ms();
    match db
        .reader()
        .and_then(|mut c| deliveries::next_due(&mut c, now))
    {
        Ok(Some(due)) => poll.min(Duration::from_millis(due.saturating_sub(now).max(10) as u64)),
        Ok(None) => poll,
        Err(e) => {
            log::warn!("looking for the next webhook retry failed: {e}");
            poll
        }
    }
}

fn deliver(db: &Db, agent: &ureq::Agent, config: &Config, d: &Delivery, w: &Webhook) {
    let now = now_ms();
    if !w.enabled {
        if let Err(e) = db.write(|c| deliveries::drop_pending(c, &d.id, now / 1000)) {
            log::warn!("webhook delivery {}: {e}", d.id);
        }
        return;
    }
    let (result, duration) = send(agent, d, w);
    let outcome = decide(
        d,
        &w.id,
        d.attempts + 1,
        &result,
        duration,
        &config.schedule,
        now_ms(),
    );
    if let Err(e) = db.write(|c| deliveries::record(c, &outcome)) {
        // The lease runs out and the delivery is tried again.
        log::warn!("recording webhook delivery {}: {e}", d.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery() -> Delivery {
        Delivery {
            id: "msg_1".into(),
            webhook_id: "w".into(),
            event_id: "e".into(),
            subject: "a.b".into(),
            payload: "{}".into(),
            state: "pending".into(),
            attempts: 0,
            next_attempt_at: 0,
            lease_until: None,
            last_status: None,
            last_error: None,
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn schedules_parse() {
        assert_eq!(
            parse_schedule("5s,5m,2h").unwrap(),
            vec![
                Duration::from_secs(5),
                Duration::from_secs(300),
                Duration::from_secs(7200)
            ]
        );
        assert_eq!(
            parse_schedule("100ms").unwrap(),
            vec![Duration::from_millis(100)]
        );
        assert!(parse_schedule("5").is_err());
        assert!(parse_schedule("5d").is_err());
        assert_eq!(Config::default().schedule.len(), 7);
    }

    #[test]
    fn decisions() {
        let s = parse_schedule("1s,2s").unwrap();
        let d = delivery();
        let ok = decide(&d, "w", 1, &Ok(204), 3, &s, 10_000);
        assert_eq!(
            (ok.state, ok.webhook_status, ok.disable),
            ("delivered", "SUCCESS", false)
        );
        let gone = decide(&d, "w", 1, &Ok(410), 3, &s, 10_000);
        assert_eq!((gone.state, gone.disable), ("failed", true));
        let retry = decide(&d, "w", 1, &Ok(500), 3, &s, 10_000);
        assert_eq!(
            (retry.state, retry.next_attempt_at, retry.disable),
            ("pending", 11_000, false)
        );
        assert!(retry.webhook_description.contains("HTTP 500"));
        let second = decide(&d, "w", 2, &Err("connection refused".into()), 3, &s, 10_000);
        assert_eq!((second.state, second.next_attempt_at), ("pending", 12_000));
        assert_eq!(second.error.as_deref(), Some("connection refused"));
        let last = decide(&d, "w", 3, &Ok(503), 3, &s, 10_000);
        assert_eq!(
            (last.state, last.webhook_status, last.disable),
            ("failed", "ERROR", true)
        );
        assert!(last.webhook_description.contains("retries exhausted"));
    }

    #[test]
    fn visibility() {
        let e = |actor: Option<&str>, data: &str| Event {
            seq: 1,
            id: "e".into(),
            subject: "a.b".into(),
            actor_id: actor.map(str::to_string),
            data: data.into(),
            created_at: 0,
            dispatched: false,
        };
        assert!(visible(&e(Some("u1"), "{}"), "u1", "user"));
        assert!(!visible(&e(Some("u2"), "{}"), "u1", "user"));
        assert!(visible(&e(Some("u2"), r#"{"userId":"u1"}"#), "u1", "user"));
        // Content in the subscriber's tree, changed by someone else (a member).
        assert!(visible(
            &e(Some("u2"), r#"{"id":"f","ownerId":"u1"}"#),
            "u1",
            "user"
        ));
        assert!(!visible(
            &e(Some("u2"), r#"{"id":"f","ownerId":"u3"}"#),
            "u1",
            "user"
        ));
        assert!(visible(&e(None, "{}"), "admin", "system-admin"));
        assert!(!visible(&e(None, "{}"), "u1", "application-admin"));
    }
}
