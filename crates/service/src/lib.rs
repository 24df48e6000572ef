//! Coffer's use cases: one function per operation, shared by the HTTP layer and the CLI. Each
//! opens its transaction, checks what the caller may do, applies the pure rules of `domain` and
//! `oauth`, writes through `store`, and records the operation's event in the same transaction.
//!
//! One folder per area, each using only the areas below it (docs/architecture.md, "Areas of the
//! service layer"): `platform`, `content`, `identity`, `oauth`, `mail`, `web_forms`,
//! `favorites`, `notifications`, `request_files`, `sources`. Where the
//! content core hands work up, the areas plug in at start-up ([`Ctx::jobs`],
//! [`Ctx::upload_completion`]).
//!
//! Errors: services return [`coffer_errors::Error`]: `Api` for refusals a client sees, `Internal`
//! for failures that are logged and answered as a generic 500.

pub mod audit;
pub mod content;
pub mod dli;
pub mod favorites;
pub mod identity;
pub mod mail;
pub mod notifications;
pub mod oauth;
pub mod platform;
pub mod request_files;
pub mod search;
pub mod sftp;
pub mod sources;
pub mod web_forms;

pub use coffer_errors::{ApiError, Error, ErrorCode, Result};
pub use coffer_store::{Backend, DatabaseUrl, Db};

use coffer_store::DbConn;

/// What the services need to know of the deployment.
#[derive(Debug, Clone)]
pub struct Config {
    /// The public base URL, without a trailing slash.
    pub base_url: String,
    /// The brand of the version header (`X-<brand>-Version`).
    pub version_brand: String,
    /// The name shown to users (`serviceName`).
    pub service_name: String,
    /// Brute-force throttling of sign-in.
    pub throttle: platform::throttle::Limits,
    /// Limits on text messages.
    pub sms_limits: platform::throttle::SmsLimits,
    /// Limits on password-reset requests.
    pub reset_limits: platform::throttle::ResetLimits,
    /// How long a password-reset link works, in seconds.
    pub password_reset_secs: i64,
    /// The LDAP directory for user lookups; the local users when absent.
    pub ldap: Option<platform::directory::LdapConfig>,
    /// An HTTP SMS gateway; messages are recorded in the database when absent.
    pub sms_gateway: Option<String>,
    /// Reverse proxies whose `X-Forwarded-For` names the client.
    pub trusted_proxies: coffer_domain::net::TrustedProxies,
    /// How long a browser remembered at two-factor sign-in (`rememberDevice`) skips the step.
    pub tfa_remember_secs: i64,
    /// Where file content is stored (`coffer_storage::BlobStore::open`); when absent, a
    /// `blobs` directory beside the SQLite database (or in the temporary directory).
    pub storage_url: Option<String>,
    /// The virus scanner (`coffer_scanner::Clamd::parse`); none: content is allowed at once.
    pub scanner: Option<String>,
    /// A command that turns a file of another type into a PDF preview, run as
    /// `CMD <input-file> <output-dir>` (`content::jobs`); without one those types have no preview.
    pub preview_converter: Option<String>,
    /// This node's name, shown as an upload session's `location`.
    pub node_name: String,
    /// The key file that signs the activity log's checkpoints (`audit::checkpoint`); none: no
    /// checkpoints are made.
    pub audit_key_file: Option<std::path::PathBuf>,
    /// External sources: the operator's directories, the address rule, the secret key file.
    pub sources: sources::Settings,
    /// How many reads run at once (`coffer_store::Db::set_read_turns`); none: the store's
    /// default (one per core and one more on SQLite, the pool's size on PostgreSQL).
    pub read_turns: Option<u32>,
}

impl Config {
    pub fn new(base_url: &str, version_brand: &str) -> Config {
        Config {
            base_url: base_url.trim_end_matches('/').to_string(),
            version_brand: version_brand.to_string(),
            service_name: version_brand.to_string(),
            throttle: platform::throttle::Limits::default(),
            sms_limits: platform::throttle::SmsLimits::default(),
            reset_limits: platform::throttle::ResetLimits::default(),
            password_reset_secs: identity::password_reset::RESET_SECS,
            ldap: None,
            sms_gateway: None,
            trusted_proxies: Default::default(),
            tfa_remember_secs: identity::tfa::REMEMBER_SECS,
            storage_url: None,
            scanner: None,
            preview_converter: None,
            node_name: node_name(),
            audit_key_file: None,
            sources: Default::default(),
            read_turns: None,
        }
    }

    /// The right-hand side of the Message-IDs of mail Coffer writes: the base URL's host.
    pub fn message_domain(&self) -> String {
        url::Url::parse(&self.base_url)
            .ok()
            .and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_string()))
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "coffer.invalid".into())
    }

    /// The JWT assertion audience: the token endpoint URL.
    pub fn token_endpoint(&self) -> String {
        format!("{}/oauth/token", self.base_url)
    }
}

/// The host's name, or `coffer` when it cannot be read.
fn node_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "coffer".into())
}

/// The services' context: the database, the blob store, the scanner and the configuration.
#[derive(Clone)]
pub struct Ctx {
    pub db: Db,
    pub config: Config,
    /// Parsed JWT keys of clients (a cache; see [`oauth::JwtKeys`]).
    pub jwt_keys: std::sync::Arc<oauth::JwtKeys>,
    /// File content.
    pub storage: coffer_storage::BlobStore,
    /// The virus scanner, when one is configured.
    pub scanner: Option<std::sync::Arc<dyn coffer_scanner::Scanner>>,
    /// This node's name.
    pub node: String,
    /// Rendered folder listings (see [`content::listings`]).
    pub listings: std::sync::Arc<content::listings::ListingCache>,
    /// The job kinds the worker runs, registered by the areas at start-up
    /// ([`content::jobs::Registry`]).
    pub jobs: std::sync::Arc<content::jobs::Registry>,
    /// What a finished upload onto a target completes into, provided by the area that owns the
    /// targets at start-up ([`content::uploads::Completion`]).
    pub upload_completion: std::sync::Arc<content::uploads::Completion>,
    /// The front-end this context serves when it is not REST (`"sftp"`): noted on the events
    /// its transactions record (see [`platform::events`]).
    pub protocol: Option<&'static str>,
}

impl Ctx {
    /// The context over an open database; opens the blob store and the scanner the
    /// configuration names.
    pub fn new(db: Db, config: Config) -> Result<Ctx> {
        let url = match &config.storage_url {
            Some(u) => u.clone(),
            None => default_storage(&db),
        };
        let storage = coffer_storage::BlobStore::open(&url)
            .map_err(|e| Error::internal_in("opening the blob store", e))?;
        let scanner = match &config.scanner {
            Some(spec) => {
                let s = coffer_scanner::Clamd::parse(spec)
                    .map_err(|e| Error::internal_in("reading the scanner address", e))?;
                Some(std::sync::Arc::new(s) as std::sync::Arc<dyn coffer_scanner::Scanner>)
            }
            None => None,
        };
        Ok(Ctx {
            node: config.node_name.clone(),
            db,
            config,
            jwt_keys: Default::default(),
            storage,
            scanner,
            listings: Default::default(),
            jobs: Default::default(),
            upload_completion: Default::default(),
            protocol: None,
        })
    }

    /// Runs `f` in a write transaction on a pooled connection.
    pub fn write<T>(&self, f: impl FnOnce(&mut DbConn) -> Result<T>) -> Result<T> {
        let p = self.protocol;
        self.db
            .write(move |c| platform::events::noting_protocol(p, || f(c)))
    }

    /// Runs a write transaction that owns its data without blocking the calling thread: on
    /// SQLite it is queued for the writer thread (`coffer_store::Submitted`), on PostgreSQL it
    /// runs on a blocking thread. Call from within the server's async runtime.
    pub async fn write_owned<T, F>(&self, f: F) -> Result<T>
    where
        F: FnOnce(&mut DbConn) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let tx = audit::transaction();
        let f = move |c: &mut DbConn| audit::carry(tx, || f(c));
        let p = self.protocol;
        let f = move |c: &mut DbConn| platform::events::noting_protocol(p, || f(c));
        match self.db.submit_write(f) {
            Ok(queued) => queued.await,
            Err(f) => self.blocking(move |ctx| ctx.write(f)).await,
        }
    }

    /// Runs a service call on the runtime's blocking threads, so that waiting for the database
    /// never stalls an event loop. Call from within the server's async runtime.
    pub async fn blocking<T, F>(&self, f: F) -> Result<T>
    where
        F: FnOnce(&Ctx) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let ctx = self.clone();
        // The request's id goes along, for the activity records the call makes.
        let tx = audit::transaction();
        match tokio::task::spawn_blocking(move || audit::carry(tx, || f(&ctx))).await {
            Ok(r) => r,
            Err(e) => Err(Error::internal_in("blocking task failed", e)),
        }
    }

    /// Runs `f` in a read transaction on a pooled connection.
    pub fn read<T>(&self, f: impl FnOnce(&mut DbConn) -> Result<T>) -> Result<T> {
        let mut conn = self.db.reader()?;
        coffer_store::read_tx(&mut conn, f)
    }

    /// Runs `f` on a pooled connection without a transaction (single-statement reads).
    pub fn with_conn<T>(&self, f: impl FnOnce(&mut DbConn) -> Result<T>) -> Result<T> {
        let mut conn = self.db.reader()?;
        f(&mut conn)
    }
}

/// The current Unix time in seconds.
pub fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// A Unix time as RFC 3339 (UTC).
///
/// Written by hand (a listing formats two for each of its entries; `time`'s general formatter
/// costs several times as much): `YYYY-MM-DDTHH:MM:SSZ`, what `time`'s `Rfc3339` writes for a
/// whole second in UTC, and "" for an instant whose year is outside 0..=9999, which RFC 3339
/// cannot write (the tests compare both over the whole range).
pub fn rfc3339(ts: i64) -> String {
    let days = ts.div_euclid(86_400);
    let secs = ts.rem_euclid(86_400);
    // Days since 1970-01-01 to a civil date (proleptic Gregorian), by 400-year eras.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if !(0..=9999).contains(&year) {
        return String::new();
    }
    let mut out = [0u8; 20];
    let mut put = |at: usize, v: i64, width: usize| {
        let mut v = v;
        for i in (0..width).rev() {
            out[at + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, year, 4);
    put(5, month, 2);
    put(8, day, 2);
    put(11, secs / 3_600, 2);
    put(14, secs / 60 % 60, 2);
    put(17, secs % 60, 2);
    for (at, c) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'Z'),
    ] {
        out[at] = c;
    }
    out.iter().map(|&b| b as char).collect()
}

/// A `blobs` directory beside the SQLite database file; for PostgreSQL without a configured
/// store, one in the temporary directory (tests; `cofferd` always names one).
fn default_storage(db: &Db) -> String {
    let dir = match db.sqlite_path() {
        Some(p) => std::path::Path::new(&p)
            .parent()
            .map(|d| d.join("blobs"))
            .unwrap_or_else(|| "blobs".into()),
        None => {
            std::env::temp_dir().join(format!("coffer-blobs-{}", uuid::Uuid::new_v4().simple()))
        }
    };
    dir.display().to_string()
}

/// Opens the database, applies pending migrations, makes the system's own records when missing
/// (`identity::accounts::ensure_system_records`), and returns the context.
pub fn open(url: &DatabaseUrl, pool_size: u32, config: Config) -> Result<Ctx> {
    let mut db = Db::open(url, pool_size)?;
    if let Some(n) = config.read_turns {
        db.set_read_turns(n);
    }
    {
        let mut conn = db.get()?;
        coffer_store::migrate::run(&mut conn)?;
    }
    let ctx = Ctx::new(db, config)?;
    identity::accounts::ensure_system_records(&ctx)?;
    Ok(ctx)
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    pub fn ctx() -> (tempfile::TempDir, Ctx) {
        let dir = tempfile::tempdir().unwrap();
        let url = DatabaseUrl::new(format!("sqlite://{}/t.db", dir.path().display()));
        let ctx = open(&url, 4, Config::new("http://127.0.0.1:8080", "Coffer")).unwrap();
        (dir, ctx)
    }

    /// A caller of `role` for a user that exists only in memory.
    pub fn caller(role: coffer_domain::Role) -> platform::auth::Caller {
        platform::auth::Caller {
            user: identity::accounts::new_user_row("a@example.com", "A", None, role, 1, 0),
            role,
            client_id: "client".into(),
            client_redirect_uri: String::new(),
            scope: Default::default(),
            family_id: "family".into(),
            device_id: None,
            token_hash: String::new(),
        }
    }
}

#[cfg(test)]
mod rfc3339_tests {
    use super::rfc3339;

    /// What `time`'s general formatter writes (the formatter `rfc3339` replaced).
    fn by_time(ts: i64) -> String {
        time::OffsetDateTime::from_unix_timestamp(ts)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            })
            .unwrap_or_default()
    }

    #[test]
    fn rfc3339_writes_what_time_writes() {
        let year0 = -62_167_219_200; // 0000-01-01T00:00:00Z
        let year10000 = 253_402_300_800; // 10000-01-01T00:00:00Z
        let mut instants = vec![
            0,
            -1,
            1,
            86_399,
            86_400,
            951_782_400,   // 2000-02-29
            4_107_542_400, // 2100-02-28
            1_764_273_600,
            year0 - 1,
            year0,
            year0 + 1,
            year10000 - 1,
            year10000,
            i64::MIN,
            i64::MAX,
            -377_705_116_800, // time's first instant, -9999-01-01
        ];
        // Every day over four centuries, at a time of day that moves; then steps across the
        // whole range of years RFC 3339 writes and beyond.
        let mut t = 946_684_800 - 200 * 365 * 86_400;
        while t < 946_684_800 + 200 * 366 * 86_400 {
            instants.push(t);
            t += 86_400 + 3_607;
        }
        let mut t = year0 - 86_400 * 4_000;
        while t < year10000 + 86_400 * 4_000 {
            instants.push(t);
            t += 7_919_999;
        }
        for ts in instants {
            assert_eq!(rfc3339(ts), by_time(ts), "{ts}");
        }
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(year0 - 1), "");
    }
}
