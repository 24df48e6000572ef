//! Outbound mail: sends the mail outbox over SMTP to the relay the operator configures, in
//! background workers like webhook delivery, never inside an API request.
//!
//! - A pump claims due messages with a lease naming this node and hands them to sender threads;
//!   each attempt's outcome is recorded only while the node still holds the lease.
//! - A failure is retried with exponential backoff and jitter until the attempts are spent, then
//!   the message is `error` with the reason in `last_error`; a permanent refusal of the message
//!   (an SMTP 5xx reply other than to authentication, or an address that does not parse) ends it
//!   at once. Nothing is deleted.
//! - Every attempt of a message sends the same Message-ID, so a receiver can tell a repeat (after
//!   a node died mid-send and its lease ran out) from a new message.
//! - A message whose link or code expired before it could be sent is marked `expired` and never
//!   sent; a message that will not be sent again has its body erased (`coffer_store::mail`).
//! - The development relay (`file:///dir`) writes each message as an `.eml` file instead of
//!   sending it, so an operator or developer reads links and codes without an SMTP server.
//! - Without a relay nothing here runs: messages stay `queued` in the outbox for an external
//!   relay, as before Coffer spoke SMTP.

use coffer_store::mail::{self, Attempt, OutboxMail};
use coffer_store::wake::Work;
use coffer_store::Db;
use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::transport::smtp::PoolConfig;
use lettre::{Message, SmtpTransport, Transport};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How the connection to the relay is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// TLS from the first byte (`smtps://`, port 465 by default).
    Tls,
    /// `STARTTLS`, and the message is not sent when the relay does not offer it.
    StartTlsRequired,
    /// `STARTTLS` when the relay offers it, else plain text.
    StartTlsOpportunistic,
    /// Plain text (a relay on the same host or network only).
    Plain,
}

/// A password that never shows in `Debug` output or logs.
#[derive(Clone)]
pub struct Password(pub String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"***\"")
    }
}

/// The relay: where it is, how to protect the connection and how to sign in.
#[derive(Debug, Clone)]
pub struct Relay {
    pub host: String,
    pub port: u16,
    pub security: Security,
    pub user: Option<String>,
    pub password: Option<Password>,
    /// PEM certificates trusted beside the system's (a relay with a private CA).
    pub ca_pem: Option<Vec<u8>>,
}

impl Relay {
    /// Parses `smtp://host[:port]` (port 25 by default; `starttls` is `required`,
    /// `opportunistic` or `never`, default `required`) or `smtps://host[:port]` (port 465).
    /// User and password are given apart, never in the URL.
    pub fn parse(url: &str, starttls: Option<&str>) -> Result<Relay, String> {
        let u = url::Url::parse(url).map_err(|e| format!("the SMTP URL does not parse: {e}"))?;
        if !u.username().is_empty() || u.password().is_some() {
            return Err(
                "the SMTP URL must not carry credentials: give the user and password \
                        as their own settings"
                    .into(),
            );
        }
        let host = u
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or("the SMTP URL needs a host")?
            .trim_matches(['[', ']'])
            .to_string();
        let starttls = starttls.map(str::trim).filter(|s| !s.is_empty());
        let (security, default_port) = match u.scheme() {
            "smtps" => {
                if starttls.is_some_and(|s| s != "never") {
                    return Err("smtps:// is TLS from the start; STARTTLS does not apply".into());
                }
                (Security::Tls, 465)
            }
            "smtp" => (
                match starttls.unwrap_or("required") {
                    "required" => Security::StartTlsRequired,
                    "opportunistic" => Security::StartTlsOpportunistic,
                    "never" => Security::Plain,
                    other => {
                        return Err(format!(
                            "STARTTLS `{other}`: use required, opportunistic or never"
                        ))
                    }
                },
                25,
            ),
            other => {
                return Err(format!(
                    "the SMTP URL's scheme `{other}`: use smtp or smtps"
                ))
            }
        };
        if !u.path().trim_matches('/').is_empty() || u.query().is_some() {
            return Err("the SMTP URL is smtp://host:port or smtps://host:port".into());
        }
        Ok(Relay {
            host,
            port: u.port().unwrap_or(default_port),
            security,
            user: None,
            password: None,
            ca_pem: None,
        })
    }

    /// The transport to the relay: a pool of up to `connections` connections, each kept open
    /// between messages (a minute idle at most) and checked with NOOP before it is used again;
    /// a connection on which anything failed is closed, not reused.
    fn transport(&self, timeout: Duration, connections: usize) -> Result<SmtpTransport, String> {
        let tls = || {
            let mut b = TlsParameters::builder(self.host.clone());
            if let Some(pem) = &self.ca_pem {
                b = b.add_root_certificate(
                    Certificate::from_pem(pem).map_err(|e| format!("the SMTP CA file: {e}"))?,
                );
            }
            b.build_rustls()
                .map_err(|e| format!("TLS for the SMTP relay: {e}"))
        };
        let mut b = SmtpTransport::builder_dangerous(self.host.clone())
            .port(self.port)
            .timeout(Some(timeout))
            .pool_config(
                PoolConfig::new()
                    .max_size(connections.clamp(1, 1024) as u32)
                    .idle_timeout(Duration::from_secs(60)),
            )
            .tls(match self.security {
                Security::Tls => Tls::Wrapper(tls()?),
                Security::StartTlsRequired => Tls::Required(tls()?),
                Security::StartTlsOpportunistic => Tls::Opportunistic(tls()?),
                Security::Plain => Tls::None,
            });
        if let Some(user) = &self.user {
            let password = self
                .password
                .as_ref()
                .map(|p| p.0.clone())
                .unwrap_or_default();
            b = b.credentials(Credentials::new(user.clone(), password));
        }
        Ok(b.build())
    }
}

/// Where messages go: an SMTP relay, or a directory that receives each message as a file.
#[derive(Debug, Clone)]
pub enum Destination {
    Smtp(Relay),
    /// The development relay: one `{id}.eml` file (RFC 5322, CRLF line ends) per message,
    /// readable by its owner only.
    Files(PathBuf),
}

impl From<Relay> for Destination {
    fn from(r: Relay) -> Destination {
        Destination::Smtp(r)
    }
}

impl Destination {
    /// Parses `file:///dir` (the development relay; an absolute path, no host, and no STARTTLS
    /// setting) or an SMTP URL as [`Relay::parse`] does.
    pub fn parse(url: &str, starttls: Option<&str>) -> Result<Destination, String> {
        if !url.trim_start().to_ascii_lowercase().starts_with("file:") {
            return Relay::parse(url, starttls).map(Destination::Smtp);
        }
        let u =
            url::Url::parse(url.trim()).map_err(|e| format!("the mail URL does not parse: {e}"))?;
        if u.host_str()
            .is_some_and(|h| !h.is_empty() && h != "localhost")
        {
            return Err("a file:// mail URL names a local directory: file:///path".into());
        }
        if starttls.is_some_and(|s| !s.trim().is_empty()) {
            return Err("STARTTLS does not apply to a file:// mail URL".into());
        }
        if u.query().is_some() || u.fragment().is_some() {
            return Err("a file:// mail URL is file:///path, without a query".into());
        }
        let dir = u
            .to_file_path()
            .map_err(|()| "a file:// mail URL needs an absolute path".to_string())?;
        Ok(Destination::Files(dir))
    }

    /// What the log says about the destination (never a credential).
    fn describe(&self) -> String {
        match self {
            Destination::Smtp(r) => format!("through {}:{} ({:?})", r.host, r.port, r.security),
            Destination::Files(dir) => format!("as .eml files into {}", dir.display()),
        }
    }
}

/// How messages leave: the SMTP connection pool, or the directory of the development relay.
#[derive(Clone)]
enum Outlet {
    Smtp(SmtpTransport),
    Files(PathBuf),
}

/// Sending settings.
#[derive(Debug, Clone)]
pub struct Config {
    pub destination: Destination,
    /// The `From` of every message (`COFFER_SMTP_FROM`, e.g. `Coffer <no-reply@example.com>`).
    pub from: Mailbox,
    /// How long one step of the SMTP conversation may take.
    pub timeout: Duration,
    /// Attempts of one message at most; then it is `error`.
    pub max_attempts: i32,
    /// The delay before the first retry; each further one doubles it, up to `retry_max`.
    pub retry_base: Duration,
    pub retry_max: Duration,
    /// How often the pump looks for work on its own when it found none. Queued mail wakes it
    /// at once (see `coffer_store::wake`), and it wakes when the earliest retry falls due.
    pub poll: Duration,
    /// Messages being sent at most.
    pub workers: usize,
    /// This node's name, written on the messages it holds.
    pub node: String,
}

impl Config {
    /// The defaults for a destination (an SMTP [`Relay`] or the development relay's directory)
    /// and a sender address.
    pub fn new(destination: impl Into<Destination>, from: Mailbox, node: &str) -> Config {
        Config {
            destination: destination.into(),
            from,
            timeout: Duration::from_secs(30),
            max_attempts: 10,
            retry_base: Duration::from_secs(30),
            retry_max: Duration::from_secs(3600),
            poll: crate::IDLE_POLL,
            workers: 4,
            node: node.to_string(),
        }
    }

    /// How long a claim holds: longer than a whole SMTP conversation can take (each of its
    /// steps may take `timeout`), so a live node never loses a message it is sending.
    fn lease_ms(&self) -> i64 {
        (self.timeout * 8 + Duration::from_secs(1)).as_millis() as i64
    }
}

/// Parses a sender address, `Name <addr@host>` or `addr@host`.
pub fn parse_from(s: &str) -> Result<Mailbox, String> {
    s.trim()
        .parse::<Mailbox>()
        .map_err(|e| format!("the sender address `{s}`: {e}"))
}

fn now_ms() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64 / 1_000_000
}

/// What one attempt came to: sent, or why not and whether trying again can help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    Ok,
    Retry(String),
    Permanent(String),
    /// Not tried: the link or code in the message expired.
    Expired,
}

/// The delay before the retry after attempt number `attempt` (1-based): `base · 2^(attempt-1)`
/// up to `max`, of which a random part (up to half) is taken off so that messages that failed
/// together do not return together.
pub fn backoff(attempt: i32, base: Duration, max: Duration, jitter: f64) -> Duration {
    let factor = 2u32.saturating_pow(attempt.clamp(1, 31) as u32 - 1);
    let full = base.saturating_mul(factor).min(max);
    full.mul_f64(1.0 - 0.5 * jitter.clamp(0.0, 1.0))
}

/// The message's next state after attempt number `attempt`.
pub fn decide(
    m: &OutboxMail,
    attempt: i32,
    result: &Sent,
    config: &Config,
    message_id: &str,
    now_ms: i64,
    jitter: f64,
) -> Attempt {
    let base = |state, next, error: Option<String>| Attempt {
        id: m.id.clone(),
        attempt,
        state,
        next_attempt_at: next,
        error,
        message_id: message_id.to_string(),
        now: now_ms / 1000,
    };
    match result {
        Sent::Ok => base("sent", now_ms, None),
        // Not an attempt: the count stays.
        Sent::Expired => Attempt {
            attempt: m.attempts,
            ..base("expired", now_ms, Some(mail::EXPIRED.to_string()))
        },
        Sent::Permanent(e) => base("error", now_ms, Some(format!("{e}; not retried"))),
        Sent::Retry(e) if attempt >= config.max_attempts => base(
            "error",
            now_ms,
            Some(format!("{e}; gave up after {attempt} attempts")),
        ),
        Sent::Retry(e) => {
            let delay = backoff(attempt, config.retry_base, config.retry_max, jitter);
            base(
                "queued",
                now_ms + delay.as_millis() as i64,
                Some(format!(
                    "{e}; attempt {attempt} of {}, retried later",
                    config.max_attempts
                )),
            )
        }
    }
}

/// The message as sent: From, To, Subject, Date (when it was written), Message-ID, a plain-text
/// body.
pub fn build(m: &OutboxMail, from: &Mailbox, message_id: &str) -> Result<Message, String> {
    let to: Mailbox = m
        .to_address
        .parse()
        .map_err(|e| format!("the recipient address does not parse: {e}"))?;
    let date = std::time::UNIX_EPOCH + Duration::from_secs(m.created_at.max(0) as u64);
    Message::builder()
        .from(from.clone())
        .to(to)
        .subject(m.subject.clone())
        .date(date)
        .message_id(Some(message_id.to_string()))
        .user_agent("Coffer".into())
        .header(ContentType::TEXT_PLAIN)
        .body(m.body.clone())
        .map_err(|e| format!("the message cannot be built: {e}"))
}

/// Sends one message (`id` is its outbox id, the file name on the development relay).
fn send(transport: &Outlet, id: &str, message: &Message) -> Sent {
    let transport = match transport {
        Outlet::Smtp(t) => t,
        Outlet::Files(dir) => {
            return match write_eml(dir, id, &message.formatted()) {
                Ok(()) => Sent::Ok,
                Err(e) => Sent::Retry(format!("writing the message into {}: {e}", dir.display())),
            }
        }
    };
    match transport.send(message) {
        Ok(_) => Sent::Ok,
        Err(e) => {
            let text = e.to_string();
            let auth = e.status().is_some_and(|c| c.to_string().starts_with("53"));
            // A 5xx reply refuses this message for good; one to authentication is the
            // relay's configuration, which the operator can fix, so that is retried.
            if e.is_permanent() && !auth {
                Sent::Permanent(text)
            } else {
                Sent::Retry(text)
            }
        }
    }
}

/// Writes a message as `{id}.eml` into `dir`, readable and writable by its owner only: first
/// under a hidden temporary name, then renamed, so a reader never sees half a message. A repeat
/// of the message (after a lost lease) writes the same file again.
fn write_eml(dir: &Path, id: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    // Outbox ids are UUIDs; anything else never becomes a path.
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(std::io::Error::other("the message id is not a file name"));
    }
    let tmp = dir.join(format!(".{id}.eml.tmp"));
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    // `create_new` refuses an existing file or symlink, so the mode below is the file's mode.
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, dir.join(format!("{id}.eml")))
}

/// Creates the development relay's directory (owner-only, as the data directory) if missing.
fn make_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// How often the pump finishes messages whose link or code expired.
const EXPIRE_EVERY: Duration = Duration::from_secs(60);

/// The running mail senders; dropping the handle tells them to stop, [`Workers::stop`] also
/// waits until they have.
pub struct Workers {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    db: Db,
}

impl Workers {
    /// Stops the senders and waits for them: the pump claims nothing more (within one poll
    /// interval), and the senders finish the messages it handed them, record their outcomes,
    /// and end.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.db.wake(Work::Mail);
        for t in std::mem::take(&mut self.threads) {
            let _ = t.join();
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // The pump may be waiting for mail: it ends now rather than at its next look.
        self.db.wake(Work::Mail);
    }
}

/// Starts the pump and the sender threads. `message_domain` is the right-hand side of the
/// Message-ID of a message written before Coffer sent mail itself.
pub fn spawn(db: Db, config: Config, message_domain: &str) -> std::io::Result<Workers> {
    let transport = match &config.destination {
        Destination::Smtp(relay) => Outlet::Smtp(
            relay
                .transport(config.timeout, config.workers.max(1))
                .map_err(std::io::Error::other)?,
        ),
        Destination::Files(dir) => {
            make_dir(dir)?;
            Outlet::Files(dir.clone())
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel::<OutboxMail>();
    let rx = Arc::new(Mutex::new(rx));
    let workers = config.workers.max(1);
    let mut threads = Vec::with_capacity(workers + 1);
    for i in 0..workers {
        let (db, rx, in_flight, config, transport) = (
            db.clone(),
            rx.clone(),
            in_flight.clone(),
            config.clone(),
            transport.clone(),
        );
        let domain = message_domain.to_string();
        let t = std::thread::Builder::new()
            .name(format!("coffer-mail-{i}"))
            .spawn(move || loop {
                let job = rx
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .recv();
                let Ok(m) = job else { break };
                deliver(&db, &transport, &config, &domain, &m);
                in_flight.fetch_sub(1, Ordering::SeqCst);
                // A pump waiting for a free sender claims again at once.
                db.wake(Work::Mail);
            })?;
        threads.push(t);
    }
    log::info!(
        "sending mail {} as node {}",
        config.destination.describe(),
        config.node
    );
    let pump_stop = stop.clone();
    let own_db = db.clone();
    // The pump holds the only sender of the channel: when it ends, so do the senders.
    let pump = std::thread::Builder::new()
        .name("coffer-mail-pump".into())
        .spawn(move || {
            let lease_ms = config.lease_ms();
            // Made before the first look, so that no mail queued after it goes unnoticed.
            let mut waiter = db.waiter(Work::Mail);
            let mut expired_at: Option<Instant> = None;
            while !pump_stop.load(Ordering::SeqCst) {
                // Messages whose link or code expired are finished (expired, body erased) rather
                // than left queued. Claims skip them anyway, so once a minute keeps an idle node
                // quiet and no body waits long.
                if expired_at.is_none_or(|t| t.elapsed() >= EXPIRE_EVERY) {
                    expired_at = Some(Instant::now());
                    if let Err(e) = db.write(|c| mail::expire(c, now_ms().div_euclid(1000))) {
                        log::warn!("expiring outgoing mail failed: {e}");
                    }
                }
                // The node holds up to twice as many messages as it has senders (those being sent
                // and those waiting for a sender), so a sender that finishes finds the next one at
                // hand, and claims come in batches of at least half the senders while every
                // sender is busy: one claim transaction per message would pace the senders.
                let held = in_flight.load(Ordering::SeqCst);
                let free = (2 * workers).saturating_sub(held);
                let mut claimed = 0;
                let claiming = free > 0 && (held < workers || free >= workers.div_ceil(2));
                if claiming {
                    match db
                        .write(|c| mail::claim(c, &config.node, now_ms(), lease_ms, free as i64))
                    {
                        Ok(batch) => {
                            claimed = batch.len();
                            for m in batch {
                                in_flight.fetch_add(1, Ordering::SeqCst);
                                if tx.send(m).is_err() {
                                    return;
                                }
                            }
                        }
                        Err(e) => log::warn!("claiming outgoing mail failed: {e}"),
                    }
                }
                if claimed < free.max(1) {
                    // Everything due is taken (or no sender is free): wait for mail, a free
                    // sender, the next retry, or the next look of our own.
                    let idle = if claiming {
                        until_due(&db, config.poll)
                    } else {
                        config.poll
                    };
                    waiter.wait(idle);
                }
            }
        })?;
    threads.push(pump);
    Ok(Workers {
        stop,
        threads,
        db: own_db,
    })
}

/// How long the pump may sleep: until the earliest queued message falls due, `poll` at most.
fn until_due(db: &Db, poll: Duration) -> Duration {
    let now = now_ms();
    match db.reader().and_then(|mut c| mail::next_due(&mut c, now)) {
        Ok(Some(due)) => poll.min(Duration::from_millis(due.saturating_sub(now).max(10) as u64)),
        Ok(None) => poll,
        Err(e) => {
            log::warn!("looking for the next mail retry failed: {e}");
            poll
        }
    }
}

fn deliver(db: &Db, transport: &Outlet, config: &Config, domain: &str, m: &OutboxMail) {
    let message_id = m.message_id_or(domain);
    // A link or code that no longer works is not sent (it may have expired while queued).
    let expired = m
        .expires_at
        .is_some_and(|e| e.saturating_mul(1000) <= now_ms());
    let result = if expired {
        Sent::Expired
    } else {
        match build(m, &config.from, &message_id) {
            Ok(message) => send(transport, &m.id, &message),
            Err(e) => Sent::Permanent(e),
        }
    };
    let attempt = m.attempts + 1;
    let outcome = decide(
        m,
        attempt,
        &result,
        config,
        &message_id,
        now_ms(),
        rand::random::<f64>(),
    );
    // The log names the message, never its body or the relay's credentials.
    match &outcome.error {
        None => log::info!("mail {} sent ({message_id})", m.id),
        Some(_) if expired => log::info!("mail {} expired before it was sent", m.id),
        Some(e) => log::warn!("mail {} attempt {attempt}: {e}", m.id),
    }
    match db.write(|c| mail::record(c, &config.node, &outcome)) {
        Ok(true) => {}
        Ok(false) => log::warn!(
            "mail {}: the lease ran out before the attempt was recorded",
            m.id
        ),
        // The lease runs out and the message is tried again.
        Err(e) => log::warn!("recording mail {}: {e}", m.id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail() -> OutboxMail {
        OutboxMail {
            id: "m1".into(),
            user_id: None,
            to_address: "grace@example.com".into(),
            subject: "Hello".into(),
            body: "Body".into(),
            created_at: 1_800_000_000,
            state: "queued".into(),
            attempts: 0,
            next_attempt_at: 0,
            lease_node: Some("n".into()),
            lease_until: Some(1),
            last_error: None,
            sent_at: None,
            message_id: None,
            expires_at: None,
        }
    }

    fn config() -> Config {
        let mut c = Config::new(
            Relay::parse("smtp://127.0.0.1:2525", Some("never")).unwrap(),
            parse_from("Coffer <no-reply@example.com>").unwrap(),
            "n",
        );
        c.max_attempts = 3;
        c.retry_base = Duration::from_secs(10);
        c.retry_max = Duration::from_secs(25);
        c
    }

    #[test]
    fn relays_parse() {
        let r = Relay::parse("smtp://mail.example.com", None).unwrap();
        assert_eq!(
            (r.host.as_str(), r.port, r.security),
            ("mail.example.com", 25, Security::StartTlsRequired)
        );
        let r = Relay::parse("smtp://mail.example.com:587", Some("opportunistic")).unwrap();
        assert_eq!((r.port, r.security), (587, Security::StartTlsOpportunistic));
        let r = Relay::parse("smtps://mail.example.com", None).unwrap();
        assert_eq!((r.port, r.security), (465, Security::Tls));
        assert!(Relay::parse("smtps://mail.example.com", Some("required")).is_err());
        assert!(Relay::parse("smtp://u:secret@mail.example.com", None).is_err());
        assert!(Relay::parse("http://mail.example.com", None).is_err());
        assert!(Relay::parse("smtp://mail.example.com", Some("sometimes")).is_err());
    }

    #[test]
    fn passwords_never_show() {
        let mut r = Relay::parse("smtp://mail.example.com", None).unwrap();
        r.password = Some(Password("hunter2".into()));
        assert!(!format!("{r:?}").contains("hunter2"));
    }

    #[test]
    fn backoff_doubles_up_to_the_maximum_with_jitter() {
        let (b, m) = (Duration::from_secs(10), Duration::from_secs(25));
        assert_eq!(backoff(1, b, m, 0.0), Duration::from_secs(10));
        assert_eq!(backoff(2, b, m, 0.0), Duration::from_secs(20));
        assert_eq!(backoff(3, b, m, 0.0), Duration::from_secs(25));
        assert_eq!(backoff(40, b, m, 0.0), Duration::from_secs(25));
        assert_eq!(backoff(1, b, m, 1.0), Duration::from_secs(5));
    }

    #[test]
    fn decisions() {
        let (m, c) = (mail(), config());
        let ok = decide(&m, 1, &Sent::Ok, &c, "<m1@x>", 5_000, 0.0);
        assert_eq!((ok.state, ok.error, ok.now), ("sent", None, 5));
        let retry = decide(
            &m,
            1,
            &Sent::Retry("451 busy".into()),
            &c,
            "<m1@x>",
            5_000,
            0.0,
        );
        assert_eq!((retry.state, retry.next_attempt_at), ("queued", 15_000));
        assert!(retry.error.unwrap().contains("451 busy"));
        let last = decide(&m, 3, &Sent::Retry("down".into()), &c, "<m1@x>", 5_000, 0.0);
        assert_eq!(last.state, "error");
        assert!(last.error.unwrap().contains("gave up after 3 attempts"));
        let refused = decide(
            &m,
            1,
            &Sent::Permanent("550".into()),
            &c,
            "<m1@x>",
            5_000,
            0.0,
        );
        assert_eq!(refused.state, "error");
        let mut tried = mail();
        tried.attempts = 2;
        let expired = decide(&tried, 3, &Sent::Expired, &c, "<m1@x>", 5_000, 0.0);
        assert_eq!((expired.state, expired.attempt), ("expired", 2));
        assert_eq!(expired.error.as_deref(), Some(mail::EXPIRED));
    }

    #[test]
    fn file_urls_name_a_directory() {
        match Destination::parse("file:///var/tmp/coffer-mail", None).unwrap() {
            Destination::Files(dir) => assert_eq!(dir, PathBuf::from("/var/tmp/coffer-mail")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            Destination::parse("smtp://mail.example.com", None).unwrap(),
            Destination::Smtp(_)
        ));
        assert!(Destination::parse("file://mail.example.com/x", None).is_err());
        assert!(Destination::parse("file:///x", Some("required")).is_err());
        assert!(Destination::parse("file:///x?y=1", None).is_err());
    }

    #[test]
    fn the_development_relay_writes_owner_only_files() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("outbox");
        make_dir(&target).unwrap();
        write_eml(&target, "m-1", b"Subject: x\r\n\r\nbody\r\n").unwrap();
        // A repeat replaces the file rather than failing.
        write_eml(&target, "m-1", b"Subject: x\r\n\r\nbody\r\n").unwrap();
        let file = target.join("m-1.eml");
        assert_eq!(std::fs::read(&file).unwrap(), b"Subject: x\r\n\r\nbody\r\n");
        let names: Vec<_> = std::fs::read_dir(&target)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("m-1.eml")]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&file), 0o600);
            assert_eq!(mode(&target), 0o700);
        }
        assert!(write_eml(&target, "../escape", b"x").is_err());
    }

    #[test]
    fn messages_carry_their_headers() {
        let m = mail();
        let from = parse_from("Coffer <no-reply@example.com>").unwrap();
        let text = String::from_utf8(build(&m, &from, "<m1@coffer.example>").unwrap().formatted())
            .unwrap();
        for h in [
            "From: Coffer <no-reply@example.com>",
            "To: grace@example.com",
            "Subject: Hello",
            "Message-ID: <m1@coffer.example>",
            "Date: ",
        ] {
            assert!(text.contains(h), "{h} in {text}");
        }
        let mut bad = mail();
        bad.to_address = "not an address".into();
        assert!(build(&bad, &from, "<m1@x>").is_err());
    }
}
