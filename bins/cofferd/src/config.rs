//! Configuration: each setting from its flag, else its environment variable, else the TOML file
//! given by `--config`, else the default.

use anyhow::{Context, Result};
use clap::Args;
use coffer_service::DatabaseUrl;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Where the installation is: every command takes these, before or after its name.
#[derive(Args, Debug, Clone)]
pub struct Global {
    /// A TOML file holding any setting by its option's name with underscores (listen, base_url, database_url, smtp_url, …)
    #[arg(long, global = true, env = "COFFER_CONFIG")]
    pub config: Option<PathBuf>,
    /// The database: sqlite://<path> or postgres://… [default: sqlite://<data dir>/coffer.db]
    #[arg(long, global = true, env = "COFFER_DATABASE_URL")]
    pub database_url: Option<String>,
    /// The directory of the SQLite database, file content and exports [default: ./coffer-data]
    #[arg(long, global = true, env = "COFFER_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// The Ed25519 key file that signs the activity log's checkpoints, made on first use; keep it off the database's host or backups [default: <data dir>/audit.key]
    #[arg(long, global = true, env = "COFFER_AUDIT_KEY_FILE")]
    pub audit_key_file: Option<PathBuf>,
    /// The key file (32 random bytes, base64) that encrypts the credentials of external sources, made on first start; every node of a cluster needs the same file [default: <data dir>/secret.key]
    #[arg(long, global = true, env = "COFFER_SECRET_KEY_FILE")]
    pub secret_key_file: Option<PathBuf>,
}

/// The server's settings: options of `serve` (and of the bare `cofferd`, which serves). The
/// other commands read them from the environment and the `--config` file, and take them as
/// options before the command's name.
#[derive(Args, Debug, Clone, Default, Serialize, Deserialize)]
pub struct ServerFlags {
    /// The address and port to listen on, host:port [default: 127.0.0.1:8080]
    #[arg(long, env = "COFFER_LISTEN")]
    pub listen: Option<String>,
    /// The public base URL, used in links and as the JWT audience [default: http://127.0.0.1:8080]
    #[arg(long, env = "COFFER_BASE_URL")]
    pub base_url: Option<String>,
    /// The brand of the version header, X-<brand>-Version [default: Coffer]
    #[arg(long, env = "COFFER_VERSION_BRAND")]
    pub version_brand: Option<String>,
    /// HTTP worker threads [default: the number of cores]
    #[arg(long, env = "COFFER_WORKERS")]
    pub workers: Option<usize>,
    /// Database connections in the pool [default: 16]
    #[arg(long, env = "COFFER_DB_POOL")]
    pub pool_size: Option<u32>,
    /// Reads running at once [default: one per core and one more on SQLite, the pool's size on PostgreSQL]
    #[arg(long, env = "COFFER_DB_READERS")]
    pub db_readers: Option<u32>,
    /// A JSON file of firewall rules replacing the shipped ones [default: the shipped rules]
    #[arg(long, env = "COFFER_WAF_RULES")]
    pub waf_rules: Option<PathBuf>,
    /// Deliver webhooks to loopback, private and link-local addresses [default: false]
    #[arg(long, env = "COFFER_WEBHOOK_ALLOW_PRIVATE")]
    pub webhook_allow_private: Option<bool>,
    /// Seconds one webhook request may take [default: 15]
    #[arg(long, env = "COFFER_WEBHOOK_TIMEOUT")]
    pub webhook_timeout: Option<u64>,
    /// Delays before each webhook retry, comma-separated durations (s, m or h) [default: 5s,5m,30m,2h,5h,10h,10h]
    #[arg(long, env = "COFFER_WEBHOOK_RETRY_SCHEDULE")]
    pub webhook_retry_schedule: Option<String>,
    /// Webhook requests in flight at most [default: 32]
    #[arg(long, env = "COFFER_WEBHOOK_WORKERS")]
    pub webhook_workers: Option<usize>,
    /// Failed sign-ins of one account or address that lock it [default: 10]
    #[arg(long, env = "COFFER_AUTH_MAX_FAILURES")]
    pub auth_max_failures: Option<i32>,
    /// Failed sign-ins of one account or address after which each further one is answered
    /// 250 ms slower, up to 2 s [default: 3]
    #[arg(long, env = "COFFER_AUTH_SLOW_AFTER")]
    pub auth_slow_after: Option<i32>,
    /// Seconds a locked account or address stays locked [default: 900]
    #[arg(long, env = "COFFER_AUTH_LOCK_SECONDS")]
    pub auth_lock_seconds: Option<i64>,
    /// Seconds failed sign-ins are remembered [default: 900]
    #[arg(long, env = "COFFER_AUTH_WINDOW_SECONDS")]
    pub auth_window_seconds: Option<i64>,
    /// Seconds a browser remembered at two-factor sign-in skips the step [default: 2592000, 30 days]
    #[arg(long, env = "COFFER_TFA_REMEMBER_SECONDS")]
    pub tfa_remember_seconds: Option<i64>,
    /// Seconds a password-reset link sent by mail works [default: 3600]
    #[arg(long, env = "COFFER_PASSWORD_RESET_SECONDS")]
    pub password_reset_seconds: Option<i64>,
    /// An LDAP directory for user lookups, ldap:// or ldaps:// [default: the local users]
    #[arg(long, env = "COFFER_LDAP_URL")]
    pub ldap_url: Option<String>,
    /// The DN to bind to the directory as [default: an anonymous bind]
    #[arg(long, env = "COFFER_LDAP_BIND_DN")]
    pub ldap_bind_dn: Option<String>,
    /// The LDAP bind password (prefer the environment or the file to a flag)
    #[arg(long, env = "COFFER_LDAP_BIND_PASSWORD", hide_env_values = true)]
    pub ldap_bind_password: Option<String>,
    /// The DN under which accounts are searched (required with --ldap-url)
    #[arg(long, env = "COFFER_LDAP_BASE_DN")]
    pub ldap_base_dn: Option<String>,
    /// The directory attribute holding an account's email address [default: mail]
    #[arg(long, env = "COFFER_LDAP_MAIL_ATTRIBUTE")]
    pub ldap_mail_attribute: Option<String>,
    /// The directory attribute holding an account's display name [default: cn]
    #[arg(long, env = "COFFER_LDAP_NAME_ATTRIBUTE")]
    pub ldap_name_attribute: Option<String>,
    /// An HTTP SMS gateway that takes POST {to, body} [default: record messages in the database]
    #[arg(long, env = "COFFER_SMS_GATEWAY_URL")]
    pub sms_gateway_url: Option<String>,
    /// Seconds over which text messages are counted against their limits [default: 3600]
    #[arg(long, env = "COFFER_SMS_WINDOW_SECONDS")]
    pub sms_window_seconds: Option<i64>,
    /// Two-factor codes sent per user, and per number, in the window [default: 10]
    #[arg(long, env = "COFFER_SMS_MAX_CODES")]
    pub sms_max_codes: Option<i32>,
    /// Test messages sent per user, and per number, in the window [default: 3]
    #[arg(long, env = "COFFER_SMS_MAX_TESTS")]
    pub sms_max_tests: Option<i32>,
    /// Reverse proxies (addresses or networks, comma-separated) whose X-Forwarded-For names the client [default: none]
    #[arg(long, env = "COFFER_TRUSTED_PROXIES")]
    pub trusted_proxies: Option<String>,
    /// Seconds a request body may take to arrive after the headers; then 408 [default: 30]
    #[arg(long, env = "COFFER_BODY_TIMEOUT_SECONDS")]
    pub body_timeout_seconds: Option<u64>,
    /// A PEM file with the server's certificate chain: serve HTTPS (with --tls-key); reloaded on SIGHUP [default: plain HTTP]
    #[arg(long, env = "COFFER_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// A PEM file with the private key of --tls-cert (PKCS#8, PKCS#1 or SEC1)
    #[arg(long, env = "COFFER_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// Where file content is stored: a directory, or s3://bucket/prefix?endpoint=…&region=… [default: <data dir>/storage]
    #[arg(long, env = "COFFER_STORAGE_URL")]
    pub storage_url: Option<String>,
    /// A clamd to scan uploads with: tcp://host:port or unix:///path [default: no scanning]
    #[arg(long, env = "COFFER_CLAMD")]
    pub clamd: Option<String>,
    /// A command that converts other file types to a PDF preview, run as CMD <input-file> <output-dir> [default: none]
    #[arg(long, env = "COFFER_PREVIEW_CONVERTER")]
    pub preview_converter: Option<String>,
    /// This node's name, shown as an upload session's location [default: the host name]
    #[arg(long, env = "COFFER_NODE_NAME")]
    pub node_name: Option<String>,
    /// The SMTP relay outgoing mail is sent through: smtp://host:port or smtps://host:port, or file:///dir to write each message as an .eml file there (development) [default: none, mail stays in the outbox]
    #[arg(long, env = "COFFER_SMTP_URL")]
    pub smtp_url: Option<String>,
    /// STARTTLS on an smtp:// relay: required, opportunistic or never [default: required]
    #[arg(long, env = "COFFER_SMTP_STARTTLS")]
    pub smtp_starttls: Option<String>,
    /// The user to authenticate to the SMTP relay as [default: no authentication]
    #[arg(long, env = "COFFER_SMTP_USER")]
    pub smtp_user: Option<String>,
    /// The SMTP relay password (prefer the environment or the file to a flag)
    #[arg(long, env = "COFFER_SMTP_PASSWORD", hide_env_values = true)]
    pub smtp_password: Option<String>,
    /// The From of outgoing mail, e.g. "Coffer <no-reply@example.com>" (needed with an SMTP relay; file:// defaults to Coffer <no-reply@localhost>)
    #[arg(long, env = "COFFER_SMTP_FROM")]
    pub smtp_from: Option<String>,
    /// A PEM file of CA certificates trusted for the relay beside the system's [default: none]
    #[arg(long, env = "COFFER_SMTP_CA_FILE")]
    pub smtp_ca_file: Option<PathBuf>,
    /// Seconds one step of the SMTP conversation may take [default: 30]
    #[arg(long, env = "COFFER_SMTP_TIMEOUT")]
    pub smtp_timeout: Option<u64>,
    /// Attempts to send one message before it is marked `error` [default: 10]
    #[arg(long, env = "COFFER_SMTP_MAX_ATTEMPTS")]
    pub smtp_max_attempts: Option<i32>,
    /// The delay before the first retry, doubled for each further one (ms, s, m or h) [default: 30s]
    #[arg(long, env = "COFFER_SMTP_RETRY_BASE")]
    pub smtp_retry_base: Option<String>,
    /// The longest delay between SMTP retries (ms, s, m or h) [default: 1h]
    #[arg(long, env = "COFFER_SMTP_RETRY_MAX")]
    pub smtp_retry_max: Option<String>,
    /// Messages being sent at once on this node [default: 4]
    #[arg(long, env = "COFFER_SMTP_WORKERS")]
    pub smtp_workers: Option<usize>,
    /// Serve SFTP on this address, e.g. 0.0.0.0:2222 [default: no SFTP server]
    #[arg(long, env = "COFFER_SFTP_LISTEN")]
    pub sftp_listen: Option<String>,
    /// Let an account's password sign in to SFTP too, besides its keys (true or false) [default: false]
    #[arg(long, env = "COFFER_SFTP_PASSWORD")]
    pub sftp_password: Option<bool>,
    /// Seconds an SFTP connection may take to sign in [default: 60]
    #[arg(long, env = "COFFER_SFTP_LOGIN_TIMEOUT")]
    pub sftp_login_timeout: Option<u64>,
    /// Seconds a signed-in SFTP connection may stay silent [default: 900]
    #[arg(long, env = "COFFER_SFTP_IDLE_TIMEOUT")]
    pub sftp_idle_timeout: Option<u64>,
    /// Server directories offered to every user as external sources: name=/path[:rw][,name=/path[:rw]…] (rw lets users write) [default: none]
    #[arg(long, env = "COFFER_SOURCE_DIRS")]
    pub source_dirs: Option<String>,
    /// Let WebDAV sources reach loopback, private and link-local addresses (true or false) [default: false]
    #[arg(long, env = "COFFER_SOURCES_ALLOW_PRIVATE")]
    pub sources_allow_private: Option<bool>,
}

/// Where file content is stored, for the commands that read or write it.
#[derive(Args, Debug, Clone, Default)]
pub struct StorageArg {
    /// Where file content is stored: a directory, or s3://bucket/prefix?endpoint=…&region=… [default: <data dir>/storage]
    #[arg(long, env = "COFFER_STORAGE_URL")]
    pub storage_url: Option<String>,
}

impl ServerFlags {
    /// These settings with every one `over` gives replacing its value: the options given after
    /// a command's name win over those given before it.
    pub fn overlay(&self, over: &ServerFlags) -> Result<ServerFlags> {
        let mut merged = serde_json::to_value(self)?;
        if let (Some(m), serde_json::Value::Object(o)) =
            (merged.as_object_mut(), serde_json::to_value(over)?)
        {
            m.extend(o.into_iter().filter(|(_, v)| !v.is_null()));
        }
        Ok(serde_json::from_value(merged)?)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    base_url: Option<String>,
    database_url: Option<String>,
    data_dir: Option<PathBuf>,
    audit_key_file: Option<PathBuf>,
    secret_key_file: Option<PathBuf>,
    version_brand: Option<String>,
    workers: Option<usize>,
    pool_size: Option<u32>,
    db_readers: Option<u32>,
    waf_rules: Option<PathBuf>,
    webhook_allow_private: Option<bool>,
    webhook_timeout: Option<u64>,
    webhook_retry_schedule: Option<String>,
    webhook_workers: Option<usize>,
    auth_max_failures: Option<i32>,
    auth_slow_after: Option<i32>,
    auth_lock_seconds: Option<i64>,
    auth_window_seconds: Option<i64>,
    tfa_remember_seconds: Option<i64>,
    password_reset_seconds: Option<i64>,
    ldap_url: Option<String>,
    ldap_bind_dn: Option<String>,
    ldap_bind_password: Option<String>,
    ldap_base_dn: Option<String>,
    ldap_mail_attribute: Option<String>,
    ldap_name_attribute: Option<String>,
    sms_gateway_url: Option<String>,
    sms_window_seconds: Option<i64>,
    sms_max_codes: Option<i32>,
    sms_max_tests: Option<i32>,
    trusted_proxies: Option<String>,
    body_timeout_seconds: Option<u64>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    storage_url: Option<String>,
    clamd: Option<String>,
    preview_converter: Option<String>,
    node_name: Option<String>,
    smtp_url: Option<String>,
    smtp_starttls: Option<String>,
    smtp_user: Option<String>,
    smtp_password: Option<String>,
    smtp_from: Option<String>,
    smtp_ca_file: Option<PathBuf>,
    smtp_timeout: Option<u64>,
    smtp_max_attempts: Option<i32>,
    smtp_retry_base: Option<String>,
    smtp_retry_max: Option<String>,
    smtp_workers: Option<usize>,
    sftp_listen: Option<String>,
    sftp_password: Option<bool>,
    sftp_login_timeout: Option<u64>,
    sftp_idle_timeout: Option<u64>,
    source_dirs: Option<String>,
    sources_allow_private: Option<bool>,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: String,
    /// Where the SQLite database lives by default, and the first-start credentials are written.
    pub data_dir: PathBuf,
    /// The key file of the activity log's checkpoints.
    pub audit_key_file: PathBuf,
    /// The key file that seals the credentials of external sources.
    pub secret_key_file: PathBuf,
    /// The operator's directories and the address rule of external sources.
    pub sources: coffer_service::sources::Settings,
    pub base_url: String,
    pub database_url: DatabaseUrl,
    pub version_brand: String,
    pub workers: usize,
    pub pool_size: u32,
    pub db_readers: Option<u32>,
    pub waf_rules: Option<PathBuf>,
    pub delivery: coffer_delivery::Config,
    pub throttle: coffer_service::platform::throttle::Limits,
    pub tfa_remember_secs: i64,
    pub password_reset_secs: i64,
    pub ldap: Option<coffer_service::platform::directory::LdapConfig>,
    pub sms_gateway: Option<String>,
    pub sms_limits: coffer_service::platform::throttle::SmsLimits,
    pub trusted_proxies: coffer_domain::net::TrustedProxies,
    pub body_timeout: std::time::Duration,
    /// The certificate chain and key files of HTTPS; none: plain HTTP.
    pub tls: Option<(PathBuf, PathBuf)>,
    pub storage_url: String,
    pub clamd: Option<String>,
    pub preview_converter: Option<String>,
    pub node_name: Option<String>,
    /// Outgoing mail over SMTP; none: messages stay in the outbox.
    pub mail: Option<coffer_delivery::mail::Config>,
    /// The SFTP server's address and settings; none: no SFTP server.
    pub sftp: Option<(String, coffer_sftp::Config)>,
}

impl Settings {
    pub fn resolve(global: &Global, flags: &ServerFlags) -> Result<Settings> {
        let file = match &global.config {
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .with_context(|| format!("reading {}", p.display()))?;
                toml::from_str::<FileConfig>(&text)
                    .with_context(|| format!("parsing {}", p.display()))?
            }
            None => FileConfig::default(),
        };
        let mail = mail_settings(flags, &file)?;
        let data_dir = global
            .data_dir
            .clone()
            .or(file.data_dir)
            .unwrap_or_else(|| PathBuf::from("./coffer-data"));
        let database_url = global
            .database_url
            .clone()
            .or(file.database_url)
            .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("coffer.db").display()));
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        Ok(Settings {
            audit_key_file: global
                .audit_key_file
                .clone()
                .or(file.audit_key_file)
                .unwrap_or_else(|| data_dir.join("audit.key")),
            secret_key_file: global
                .secret_key_file
                .clone()
                .or(file.secret_key_file)
                .unwrap_or_else(|| data_dir.join("secret.key")),
            sources: coffer_service::sources::Settings {
                dirs: match flags.source_dirs.clone().or(file.source_dirs) {
                    Some(text) if !text.trim().is_empty() => {
                        coffer_sources::parse_source_dirs(&text)
                            .map_err(|e| anyhow::anyhow!("COFFER_SOURCE_DIRS: {e}"))?
                            .into_iter()
                            .map(|d| coffer_service::sources::OperatorDir {
                                name: d.name,
                                root: d.root,
                                writable: d.writable,
                            })
                            .collect()
                    }
                    _ => Vec::new(),
                },
                allow_private: flags
                    .sources_allow_private
                    .or(file.sources_allow_private)
                    .unwrap_or(false),
                key_file: None,
            },
            data_dir: data_dir.clone(),
            listen: flags
                .listen
                .clone()
                .or(file.listen)
                .unwrap_or_else(|| "127.0.0.1:8080".into()),
            base_url: flags
                .base_url
                .clone()
                .or(file.base_url)
                .unwrap_or_else(|| "http://127.0.0.1:8080".into())
                .trim_end_matches('/')
                .to_string(),
            database_url: DatabaseUrl::new(database_url),
            version_brand: flags
                .version_brand
                .clone()
                .or(file.version_brand)
                .unwrap_or_else(|| "Coffer".into()),
            workers: flags.workers.or(file.workers).unwrap_or(cores),
            pool_size: flags.pool_size.or(file.pool_size).unwrap_or(16),
            db_readers: flags.db_readers.or(file.db_readers),
            waf_rules: flags.waf_rules.clone().or(file.waf_rules),
            delivery: {
                let mut d = coffer_delivery::Config::default();
                if let Some(v) = flags.webhook_allow_private.or(file.webhook_allow_private) {
                    d.allow_private = v;
                }
                if let Some(v) = flags.webhook_timeout.or(file.webhook_timeout) {
                    d.timeout = std::time::Duration::from_secs(v.max(1));
                }
                if let Some(v) = flags
                    .webhook_retry_schedule
                    .clone()
                    .or(file.webhook_retry_schedule)
                {
                    d.schedule = coffer_delivery::parse_schedule(&v)
                        .map_err(|e| anyhow::anyhow!("webhook retry schedule: {e}"))?;
                }
                if let Some(v) = flags.webhook_workers.or(file.webhook_workers) {
                    d.workers = v.max(1);
                }
                d
            },
            throttle: {
                let mut t = coffer_service::platform::throttle::Limits::default();
                if let Some(v) = flags.auth_max_failures.or(file.auth_max_failures) {
                    t.max_failures = v.max(1);
                }
                if let Some(v) = flags.auth_slow_after.or(file.auth_slow_after) {
                    t.slow_after = v.max(0);
                }
                if let Some(v) = flags.auth_lock_seconds.or(file.auth_lock_seconds) {
                    t.lock_secs = v.max(1);
                }
                if let Some(v) = flags.auth_window_seconds.or(file.auth_window_seconds) {
                    t.window_secs = v.max(1);
                }
                t
            },
            tfa_remember_secs: flags
                .tfa_remember_seconds
                .or(file.tfa_remember_seconds)
                .unwrap_or(coffer_service::identity::tfa::REMEMBER_SECS)
                .max(1),
            password_reset_secs: flags
                .password_reset_seconds
                .or(file.password_reset_seconds)
                .unwrap_or(coffer_service::identity::password_reset::RESET_SECS)
                .max(60),
            ldap: match flags.ldap_url.clone().or(file.ldap_url) {
                None => None,
                Some(url) => Some(coffer_service::platform::directory::LdapConfig {
                    url,
                    bind_dn: flags.ldap_bind_dn.clone().or(file.ldap_bind_dn),
                    bind_password: flags.ldap_bind_password.clone().or(file.ldap_bind_password),
                    base_dn: flags
                        .ldap_base_dn
                        .clone()
                        .or(file.ldap_base_dn)
                        .ok_or_else(|| {
                            anyhow::anyhow!("COFFER_LDAP_URL needs COFFER_LDAP_BASE_DN")
                        })?,
                    mail_attribute: flags
                        .ldap_mail_attribute
                        .clone()
                        .or(file.ldap_mail_attribute)
                        .unwrap_or_else(|| "mail".into()),
                    name_attribute: flags
                        .ldap_name_attribute
                        .clone()
                        .or(file.ldap_name_attribute)
                        .unwrap_or_else(|| "cn".into()),
                    timeout: std::time::Duration::from_secs(5),
                }),
            },
            sms_gateway: flags.sms_gateway_url.clone().or(file.sms_gateway_url),
            sms_limits: {
                let mut l = coffer_service::platform::throttle::SmsLimits::default();
                if let Some(v) = flags.sms_window_seconds.or(file.sms_window_seconds) {
                    l.window_secs = v.max(1);
                }
                if let Some(v) = flags.sms_max_codes.or(file.sms_max_codes) {
                    l.codes = v.max(1);
                }
                if let Some(v) = flags.sms_max_tests.or(file.sms_max_tests) {
                    l.tests = v.max(1);
                }
                l
            },
            trusted_proxies: coffer_domain::net::TrustedProxies::parse(
                flags
                    .trusted_proxies
                    .as_deref()
                    .or(file.trusted_proxies.as_deref())
                    .unwrap_or(""),
            )
            .map_err(|e| anyhow::anyhow!("trusted_proxies: {e}"))?,
            storage_url: flags
                .storage_url
                .clone()
                .or(file.storage_url)
                .unwrap_or_else(|| data_dir.join("storage").display().to_string()),
            clamd: flags.clamd.clone().or(file.clamd),
            preview_converter: flags
                .preview_converter
                .clone()
                .or(file.preview_converter)
                .filter(|c| !c.trim().is_empty()),
            mail,
            sftp: flags
                .sftp_listen
                .clone()
                .or(file.sftp_listen)
                .filter(|l| !l.trim().is_empty())
                .map(|listen| {
                    let mut c = coffer_sftp::Config::default();
                    if let Some(p) = flags.sftp_password.or(file.sftp_password) {
                        c.password = p;
                    }
                    if let Some(s) = flags.sftp_login_timeout.or(file.sftp_login_timeout) {
                        c.login_timeout = std::time::Duration::from_secs(s.max(1));
                    }
                    if let Some(s) = flags.sftp_idle_timeout.or(file.sftp_idle_timeout) {
                        c.idle_timeout = std::time::Duration::from_secs(s.max(1));
                    }
                    (listen, c)
                }),
            node_name: flags.node_name.clone().or(file.node_name),
            tls: match (
                flags.tls_cert.clone().or(file.tls_cert),
                flags.tls_key.clone().or(file.tls_key),
            ) {
                (Some(cert), Some(key)) => Some((cert, key)),
                (None, None) => None,
                _ => anyhow::bail!("tls_cert and tls_key go together: give both or neither"),
            },
            body_timeout: flags
                .body_timeout_seconds
                .or(file.body_timeout_seconds)
                .map_or(coffer_http::DEFAULT_BODY_TIMEOUT, |s| {
                    std::time::Duration::from_secs(s.max(1))
                }),
        })
    }

    /// The mail sender's settings with this node's name.
    pub fn mail_config(&self, node: &str) -> Option<coffer_delivery::mail::Config> {
        self.mail.clone().map(|mut m| {
            m.node = node.to_string();
            m
        })
    }

    pub fn service_config(&self) -> coffer_service::Config {
        let mut c = coffer_service::Config::new(&self.base_url, &self.version_brand);
        c.throttle = self.throttle.clone();
        c.tfa_remember_secs = self.tfa_remember_secs;
        c.password_reset_secs = self.password_reset_secs;
        c.ldap = self.ldap.clone();
        c.sms_gateway = self.sms_gateway.clone();
        c.sms_limits = self.sms_limits.clone();
        c.trusted_proxies = self.trusted_proxies.clone();
        c.storage_url = Some(self.storage_url.clone());
        c.scanner = self.clamd.clone();
        c.preview_converter = self.preview_converter.clone();
        c.audit_key_file = Some(self.audit_key_file.clone());
        c.sources = self.sources.clone();
        c.sources.key_file = Some(self.secret_key_file.clone());
        c.read_turns = self.db_readers;
        if let Some(n) = &self.node_name {
            c.node_name = n.clone();
        }
        c
    }
}

/// One duration of the form the webhook retry schedule takes (`30s`, `5m`, …).
fn duration(name: &str, s: &str) -> Result<std::time::Duration> {
    match coffer_delivery::parse_schedule(s).map_err(|e| anyhow::anyhow!("{name}: {e}"))?[..] {
        [d] => Ok(d),
        _ => anyhow::bail!("{name}: one duration, e.g. 30s"),
    }
}

/// The SMTP settings: none without a relay URL.
fn mail_settings(
    flags: &ServerFlags,
    file: &FileConfig,
) -> Result<Option<coffer_delivery::mail::Config>> {
    use coffer_delivery::mail;
    let Some(url) = flags.smtp_url.clone().or(file.smtp_url.clone()) else {
        return Ok(None);
    };
    let pick = |f: &Option<String>, c: &Option<String>| f.clone().or(c.clone());
    let mut destination = mail::Destination::parse(
        &url,
        pick(&flags.smtp_starttls, &file.smtp_starttls).as_deref(),
    )
    .map_err(|e| anyhow::anyhow!("COFFER_SMTP_URL: {e}"))?;
    if let mail::Destination::Smtp(relay) = &mut destination {
        relay.user = pick(&flags.smtp_user, &file.smtp_user).filter(|u| !u.is_empty());
        relay.password = pick(&flags.smtp_password, &file.smtp_password).map(mail::Password);
        if let Some(path) = flags.smtp_ca_file.clone().or(file.smtp_ca_file.clone()) {
            relay.ca_pem =
                Some(std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?);
        }
    }
    // The development relay delivers nowhere, so any sender does.
    let from = match (pick(&flags.smtp_from, &file.smtp_from), &destination) {
        (Some(from), _) => from,
        (None, mail::Destination::Files(_)) => "Coffer <no-reply@localhost>".into(),
        (None, mail::Destination::Smtp(_)) => {
            anyhow::bail!("COFFER_SMTP_URL needs COFFER_SMTP_FROM")
        }
    };
    let from = mail::parse_from(&from).map_err(|e| anyhow::anyhow!("COFFER_SMTP_FROM: {e}"))?;
    let mut c = mail::Config::new(destination, from, "");
    if let Some(v) = flags.smtp_timeout.or(file.smtp_timeout) {
        c.timeout = std::time::Duration::from_secs(v.max(1));
    }
    if let Some(v) = flags.smtp_max_attempts.or(file.smtp_max_attempts) {
        c.max_attempts = v.max(1);
    }
    if let Some(v) = pick(&flags.smtp_retry_base, &file.smtp_retry_base) {
        c.retry_base = duration("COFFER_SMTP_RETRY_BASE", &v)?;
    }
    if let Some(v) = pick(&flags.smtp_retry_max, &file.smtp_retry_max) {
        c.retry_max = duration("COFFER_SMTP_RETRY_MAX", &v)?;
    }
    if let Some(v) = flags.smtp_workers.or(file.smtp_workers) {
        c.workers = v.max(1);
    }
    Ok(Some(c))
}
