//! `cofferd`: the Coffer server and its operator commands.

mod admin;
mod backup;
mod config;
mod mail_cmd;
mod search_cmd;

/// mimalloc returns freed memory to the system (glibc kept each thread's 19 MiB password-hash
/// buffers) and allocates faster under many threads. It is built with `no_thp`: transparent huge
/// pages turned a touched byte of its arenas into 2 MiB of resident memory, and cofferd's peak
/// RSS over a 1 GiB upload and its downloads fell from ~136 MB to ~87 MB without them
/// (`scripts/bench-content.sh` (j)). With `override` it is the C allocator of the process too,
/// so SQLite (its page caches, full-text merge buffers) and OpenSSL allocate from it: glibc gave
/// each thread that called into SQLite an arena of its own and kept what each had freed, which
/// held the search benchmark's peak RSS near 200 MB (`scripts/bench-search.sh` (q)). `main`
/// first sets its purge delay (`coffer_alloc::tune`: freed memory goes back to the system at once
/// rather than a second later, unless `MIMALLOC_PURGE_DELAY` says otherwise).
#[global_allocator]
static GLOBAL: coffer_alloc::Allocator = coffer_alloc::Allocator;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use coffer_domain::Role;
use coffer_service::Ctx;
use config::{Global, ServerFlags, Settings, StorageArg};
use serde_json::json;

#[derive(Parser)]
#[command(
    name = "cofferd",
    version,
    about = "Coffer: a secure content-collaboration server"
)]
struct Cli {
    #[command(flatten)]
    global: Global,
    /// The server's settings, for the bare `cofferd` (which serves); every other command reads
    /// them here too, before its name (`cofferd --storage-url … storage check`).
    #[command(flatten, next_help_heading = "Server options (also of `serve`)")]
    server: ServerFlags,
    #[command(subcommand)]
    command: Option<Command>,
}

/// `serve`'s own options: the server's settings.
#[derive(Args, Default)]
struct ServeArgs {
    #[command(flatten)]
    server: ServerFlags,
}

// Parsed once at start: serve's many options cost nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Apply migrations, then serve HTTP (the default).
    Serve(ServeArgs),
    /// Apply pending migrations and exit.
    Migrate,
    /// Manage user accounts.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Manage OAuth clients.
    Client {
        #[command(subcommand)]
        command: ClientCommand,
    },
    /// Manage SCIM tokens.
    ScimToken {
        #[command(subcommand)]
        command: ScimTokenCommand,
    },
    /// Read or change system settings.
    Settings {
        #[command(subcommand)]
        command: SettingsCommand,
    },
    /// Manage web forms (their submissions arrive as mail in the owner's inbox).
    Webform {
        #[command(subcommand)]
        command: WebformCommand,
    },
    /// Check file content against the database.
    Storage {
        #[command(subcommand)]
        command: StorageCommand,
    },
    /// Outgoing mail.
    Mail {
        #[command(subcommand)]
        command: mail_cmd::MailCommand,
    },
    /// The full-text index: its state, and rebuilding it.
    Search {
        #[command(subcommand)]
        command: search_cmd::SearchCommand,
    },
    /// The activity log: verify its chain, sign a checkpoint.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// The secret key that encrypts the credentials of external sources.
    Secrets {
        #[command(subcommand)]
        command: SecretsCommand,
    },
    /// Copy the database and the file content, consistently, while the server runs.
    Backup(backup::BackupArgs),
    /// Put a backup back into an empty data directory or database.
    Restore(backup::RestoreArgs),
}

impl Command {
    /// The server settings given after the command's name (they win over those before it).
    fn server_options(&self) -> ServerFlags {
        let storage = |s: &StorageArg| ServerFlags {
            storage_url: s.storage_url.clone(),
            ..ServerFlags::default()
        };
        match self {
            Command::Serve(a) => a.server.clone(),
            Command::Storage {
                command: StorageCommand::Check { storage: s, .. },
            } => storage(s),
            Command::Backup(a) => storage(&a.storage),
            Command::Restore(a) => storage(&a.storage),
            Command::User {
                command: UserCommand::Manage(m),
            } => m.server_options(),
            _ => ServerFlags::default(),
        }
    }
}

#[derive(Subcommand)]
enum StorageCommand {
    /// Reports blobs no version refers to and versions whose blob is missing; prints JSON.
    Check {
        /// Delete the blobs no version refers to.
        #[arg(long)]
        repair: bool,
        #[command(flatten)]
        storage: StorageArg,
    },
}

#[derive(Subcommand)]
enum UserCommand {
    /// Create an account; prints `{id, email, password}` (the password is generated when not given).
    Create {
        /// The account's email address (its sign-in name).
        #[arg(long)]
        email: String,
        /// The display name.
        #[arg(long)]
        name: String,
        /// The password; it must pass the password policy [default: a generated one]
        #[arg(long)]
        password: Option<String>,
        /// user, system-admin, application-admin or helpdesk-admin
        #[arg(long, default_value = "user")]
        role: String,
        /// A profile (user type) name or id.
        #[arg(long)]
        profile: Option<String>,
    },
    #[command(flatten)]
    Manage(admin::UserManage),
}

#[derive(Subcommand)]
enum ClientCommand {
    /// Register a client; prints it with `client_secret`, shown only here.
    Create {
        /// The client's name, unique in the registry.
        #[arg(long)]
        name: String,
        /// Where the authorization flow sends the browser back to.
        #[arg(long)]
        redirect_uri: String,
        /// The scope the client may ask for, space-separated items ("*": everything).
        #[arg(long, default_value = "*")]
        scope: String,
        /// A free text shown to administrators.
        #[arg(long, default_value = "")]
        description: String,
        /// Comma-separated: authorization_code, refresh_token, signature, password, jwt_bearer
        #[arg(long, default_value = "authorization_code,refresh_token")]
        flows: String,
        /// The shared key of the signature flow.
        #[arg(long)]
        signature_key: Option<String>,
        /// A file with the client's RSA public key (PEM), for the JWT assertion flow.
        #[arg(long)]
        jwt_public_key: Option<std::path::PathBuf>,
        /// Hours an access token lives [default: the server's default]
        #[arg(long)]
        access_token_lifetime: Option<i32>,
        /// Hours a refresh token lives [default: the server's default]
        #[arg(long)]
        refresh_token_lifetime: Option<i32>,
        /// Skip the consent page for this client.
        #[arg(long)]
        no_consent: bool,
    },
    #[command(flatten)]
    Manage(admin::ClientManage),
}

#[derive(Subcommand)]
enum ScimTokenCommand {
    /// Create a SCIM token; prints `{token}`, shown only here.
    Create {
        /// A name to tell the token apart by.
        #[arg(long, default_value = "scim")]
        name: String,
    },
    /// List the SCIM tokens (ids, names, whether revoked; never the tokens).
    List,
    /// Revoke a SCIM token by id: it stops working at once.
    Revoke {
        /// The token's id (from `scim-token list`).
        id: String,
    },
}

/// Where a form's fields come from: a JSON array given inline, or a file holding one.
#[derive(clap::Args)]
struct FieldsArg {
    /// The fields as a JSON array (see docs/web-forms.md).
    #[arg(long, conflicts_with = "fields_file")]
    fields: Option<String>,
    /// A file with the fields as a JSON array.
    #[arg(long)]
    fields_file: Option<std::path::PathBuf>,
}

impl FieldsArg {
    fn read(&self) -> Result<Option<serde_json::Value>> {
        let text = match (&self.fields, &self.fields_file) {
            (Some(t), _) => t.clone(),
            (None, Some(path)) => std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?,
            (None, None) => return Ok(None),
        };
        let v = serde_json::from_str(&text).context("the fields are not valid JSON")?;
        Ok(Some(v))
    }
}

/// A comma-separated list of profile names or ids (empty: every profile).
fn profile_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

#[derive(Subcommand)]
enum WebformCommand {
    /// Define a form; prints it (with its `url`).
    Create {
        /// The form's name.
        #[arg(long)]
        name: String,
        /// A text shown above the form.
        #[arg(long, default_value = "")]
        description: String,
        /// The email address of the owner: a user, or a shared mailbox.
        #[arg(long)]
        owner: String,
        #[command(flatten)]
        fields: FieldsArg,
        /// Comma-separated profile names or ids allowed to use the form (default: all).
        #[arg(long, default_value = "")]
        profiles: String,
        /// Only signed-in users (of the allowed profiles) may read and submit it.
        #[arg(long)]
        auth_required: bool,
        /// Create it disabled.
        #[arg(long)]
        inactive: bool,
        /// Other sites may show the page in a frame.
        #[arg(long)]
        embedded: bool,
        /// The page may be opened on its own (the default unless --embedded).
        #[arg(long)]
        standalone: bool,
    },
    /// Change a form; what is not given stays.
    Update {
        /// The form's id.
        id: String,
        /// A new name.
        #[arg(long)]
        name: Option<String>,
        /// A new text shown above the form.
        #[arg(long)]
        description: Option<String>,
        /// The email address of the new owner: a user, or a shared mailbox.
        #[arg(long)]
        owner: Option<String>,
        #[command(flatten)]
        fields: FieldsArg,
        /// Comma-separated profile names or ids; an empty value opens it to every profile.
        #[arg(long)]
        profiles: Option<String>,
        /// Whether only signed-in users (of the allowed profiles) may read and submit it.
        #[arg(long)]
        auth_required: Option<bool>,
        /// Enable (true) or disable (false) the form.
        #[arg(long)]
        active: Option<bool>,
        /// Whether other sites may show the page in a frame.
        #[arg(long)]
        embedded: Option<bool>,
        /// Whether the page may be opened on its own.
        #[arg(long)]
        standalone: Option<bool>,
    },
    /// Delete a form (the mail its submissions made stays).
    Delete {
        /// The form's id.
        id: String,
    },
    /// List every form, disabled ones too.
    List,
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Walk the activity log's chain and its signed checkpoints; exits non-zero naming the first
    /// record changed, removed or inserted.
    Verify,
    /// Sign the chain head as a checkpoint with the audit key file.
    Checkpoint,
}

#[derive(Subcommand)]
enum SecretsCommand {
    /// Re-encrypt every stored source credential under the key in --new-key-file (made when it
    /// does not exist), in one transaction; then point COFFER_SECRET_KEY_FILE at that file (or
    /// move it over the old one) on every node and restart them.
    Rotate {
        /// The new key file: 32 random bytes, base64.
        #[arg(long)]
        new_key_file: std::path::PathBuf,
    },
}

#[derive(Subcommand)]
enum SettingsCommand {
    /// Print a setting's value.
    Get {
        /// The setting's name.
        key: String,
    },
    /// Change a setting.
    Set {
        /// The setting's name.
        key: String,
        /// Its new value.
        value: String,
    },
}

fn main() {
    coffer_alloc::tune();
    // Everything cofferd creates (the SQLite database and its journal, file content, staging,
    // exports, first-start credentials) is its owner's only, whatever umask it was started with.
    #[cfg(unix)]
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    let cli = Cli::parse();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format_timestamp_millis()
        .init();
    if let Err(e) = run(cli) {
        eprintln!("cofferd: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    let command = cli
        .command
        .unwrap_or_else(|| Command::Serve(ServeArgs::default()));
    let server = cli.server.overlay(&command.server_options())?;
    let settings = Settings::resolve(&cli.global, &server)?;
    match command {
        Command::Serve(_) => serve(settings),
        Command::Migrate => {
            let _ = open(&settings, 1)?;
            println!(
                "{}",
                json!({"migrated": true, "database": settings.database_url.to_string()})
            );
            Ok(())
        }
        Command::User {
            command: UserCommand::Manage(m),
        } => admin::user(&open(&settings, 1)?, m),
        Command::Client {
            command: ClientCommand::Manage(m),
        } => admin::client(&open(&settings, 1)?, m),
        Command::Backup(a) => backup::backup(&open(&settings, 2)?, &a),
        Command::Restore(a) => backup::restore(&settings, &a),
        Command::User {
            command:
                UserCommand::Create {
                    email,
                    name,
                    password,
                    role,
                    profile,
                },
        } => {
            let ctx = open(&settings, 1)?;
            let role: Role = role.parse().map_err(anyhow::Error::msg)?;
            let (user, password) = coffer_service::identity::accounts::create_user(
                &ctx,
                coffer_service::identity::accounts::NewUser {
                    email,
                    name,
                    password,
                    role,
                    profile,
                },
                None,
            )
            .map_err(api)?;
            println!(
                "{}",
                json!({"id": user.id, "email": user.email, "password": password})
            );
            Ok(())
        }
        Command::Client {
            command:
                ClientCommand::Create {
                    name,
                    redirect_uri,
                    scope,
                    description,
                    flows,
                    signature_key,
                    jwt_public_key,
                    access_token_lifetime,
                    refresh_token_lifetime,
                    no_consent,
                },
        } => {
            let ctx = open(&settings, 1)?;
            let flow =
                coffer_domain::client::flow::parse_list(&flows).map_err(anyhow::Error::msg)?;
            let jwt_public_key = jwt_public_key
                .map(|p| {
                    std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))
                })
                .transpose()?;
            let input = coffer_service::identity::clients::ClientInput {
                name,
                description,
                redirect_uri,
                scope,
                signature_key,
                jwt_public_key,
                access_token_lifetime,
                refresh_token_lifetime,
                flow: Some(flow),
                flag: Some(if no_consent {
                    coffer_domain::client::flag::NO_CONSENT
                } else {
                    0
                }),
            };
            let view = coffer_service::identity::clients::create(
                &ctx,
                input,
                coffer_service::identity::clients::Registrar::Operator,
            )
            .map_err(api)?;
            let mut out = serde_json::to_value(&view)?;
            out["client_id"] = json!(view.id);
            println!("{out}");
            Ok(())
        }
        Command::ScimToken { command } => {
            let ctx = open(&settings, 1)?;
            match command {
                ScimTokenCommand::Create { name } => {
                    let (id, token) =
                        coffer_service::identity::scim_tokens::create(&ctx, &name).map_err(api)?;
                    println!("{}", json!({"id": id, "name": name, "token": token}));
                }
                ScimTokenCommand::List => {
                    let all = coffer_service::identity::scim_tokens::list(&ctx).map_err(api)?;
                    println!("{}", serde_json::to_value(all)?);
                }
                ScimTokenCommand::Revoke { id } => {
                    coffer_service::identity::scim_tokens::revoke(&ctx, &id).map_err(api)?;
                    println!("{}", json!({"id": id, "revoked": true}));
                }
            }
            Ok(())
        }
        Command::Settings { command } => {
            let ctx = open(&settings, 1)?;
            match command {
                SettingsCommand::Get { key } => println!(
                    "{}",
                    coffer_service::identity::settings::get(&ctx, &key).map_err(api)?
                ),
                SettingsCommand::Set { key, value } => {
                    coffer_service::identity::settings::set(&ctx, &key, &value, None)
                        .map_err(api)?;
                    println!(
                        "{}",
                        coffer_service::identity::settings::get(&ctx, &key).map_err(api)?
                    );
                }
            }
            Ok(())
        }
        Command::Webform { command } => webform(&settings, command),
        Command::Audit { command } => audit(&settings, command),
        Command::Secrets { command } => secrets(&settings, command),
        Command::Mail { command } => mail_cmd::run(&open(&settings, 1)?, command),
        Command::Search { command } => search_cmd::run(&open(&settings, 1)?, command),
        Command::Storage {
            command: StorageCommand::Check { repair, .. },
        } => {
            let ctx = open(&settings, 2)?;
            let report = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(coffer_service::content::check::check(&ctx, repair))
                .map_err(api)?;
            println!("{}", serde_json::to_string_pretty(&report)?);
            Ok(())
        }
    }
}

fn audit(settings: &Settings, command: AuditCommand) -> Result<()> {
    use coffer_service::audit::{checkpoint, verify};
    let ctx = open(settings, 1)?;
    match command {
        AuditCommand::Verify => {
            let started = std::time::Instant::now();
            // The checkpoints must verify with the key file's key when there is one: a key
            // stored beside them in the database proves nothing on its own.
            let key = if settings.audit_key_file.exists() {
                Some(
                    checkpoint::Signer::open(&settings.audit_key_file)
                        .map_err(api)?
                        .public_key(),
                )
            } else {
                None
            };
            let r = verify::verify(&ctx, key.as_deref()).map_err(api)?;
            let secs = started.elapsed().as_secs_f64();
            println!(
                "{} records ({}..{}), {} checkpoints checked in {:.2} s ({:.0} records/s)",
                r.records,
                r.first,
                r.last,
                r.checkpoints,
                secs,
                r.records as f64 / secs.max(1e-9)
            );
            if key.is_none() {
                println!("no audit key file: checkpoints checked against their own keys");
            }
            match r.problem {
                None => {
                    println!("the activity log is intact");
                    Ok(())
                }
                Some(p) => anyhow::bail!("the activity log was tampered with: {p}"),
            }
        }
        AuditCommand::Checkpoint => {
            let signer = checkpoint::Signer::open(&settings.audit_key_file).map_err(api)?;
            match checkpoint::checkpoint(&ctx, &signer).map_err(api)? {
                Some(c) => println!("checkpoint at record {}: {}", c.seq, c.hash),
                None => println!("nothing new to sign"),
            }
            Ok(())
        }
    }
}

fn secrets(settings: &Settings, command: SecretsCommand) -> Result<()> {
    use coffer_service::sources::{manage, SecretKey};
    let ctx = open(settings, 1)?;
    match command {
        SecretsCommand::Rotate { new_key_file } => {
            if new_key_file == settings.secret_key_file {
                anyhow::bail!("--new-key-file must be another file than the current key file");
            }
            let old = SecretKey::read(&settings.secret_key_file)
                .map_err(api)
                .with_context(|| {
                    format!(
                        "reading the current key {}",
                        settings.secret_key_file.display()
                    )
                })?;
            let new = SecretKey::read_or_make(&new_key_file)
                .map_err(api)
                .with_context(|| format!("reading the new key {}", new_key_file.display()))?;
            let n = manage::rotate(&ctx, &old, &new).map_err(api)?;
            println!(
                "{n} stored credentials re-encrypted with {}; set COFFER_SECRET_KEY_FILE to it on every node and restart them",
                new_key_file.display()
            );
            Ok(())
        }
    }
}

fn webform(settings: &Settings, command: WebformCommand) -> Result<()> {
    use coffer_service::web_forms::{self as forms, FormInput};
    let out = match command {
        WebformCommand::Create {
            name,
            description,
            owner,
            fields,
            profiles,
            auth_required,
            inactive,
            embedded,
            standalone,
        } => {
            let fields = fields
                .read()?
                .ok_or_else(|| anyhow::anyhow!("--fields or --fields-file is required"))?;
            let ctx = open(settings, 1)?;
            let input = FormInput {
                name: Some(name),
                description: Some(description),
                owner: Some(owner),
                fields: Some(fields),
                profiles: Some(profile_list(&profiles)),
                auth_required: Some(auth_required),
                active: Some(!inactive),
                embedded: Some(embedded),
                standalone: Some(standalone || !embedded),
            };
            serde_json::to_value(forms::create(&ctx, &input).map_err(api)?)?
        }
        WebformCommand::Update {
            id,
            name,
            description,
            owner,
            fields,
            profiles,
            auth_required,
            active,
            embedded,
            standalone,
        } => {
            let fields = fields.read()?;
            let ctx = open(settings, 1)?;
            let input = FormInput {
                name,
                description,
                owner,
                fields,
                profiles: profiles.as_deref().map(profile_list),
                auth_required,
                active,
                embedded,
                standalone,
            };
            serde_json::to_value(forms::update(&ctx, &id, &input).map_err(api)?)?
        }
        WebformCommand::Delete { id } => {
            let ctx = open(settings, 1)?;
            forms::delete(&ctx, &id).map_err(api)?;
            json!({"id": id, "deleted": true})
        }
        WebformCommand::List => {
            let ctx = open(settings, 1)?;
            serde_json::to_value(forms::list_all(&ctx).map_err(api)?)?
        }
    };
    println!("{out}");
    Ok(())
}

/// An operator-facing error: the catalogue message, or the internal cause.
pub(crate) fn api(e: coffer_service::Error) -> anyhow::Error {
    match e {
        coffer_service::Error::Api(a) => anyhow::anyhow!("{}", a.message),
        // The cause stays a value: anyhow prints its chain ("Caused by: …").
        coffer_service::Error::Internal(cause) => anyhow::Error::new(cause),
    }
}

/// Opens the database and brings it up to date (every command that touches it does).
pub(crate) fn open(settings: &Settings, pool: u32) -> Result<Ctx> {
    coffer_service::open(&settings.database_url, pool, settings.service_config())
        .map_err(api)
        .context("opening the database")
}

fn serve(settings: Settings) -> Result<()> {
    let ctx = open(&settings, settings.pool_size)?;
    if let Some(b) = coffer_service::identity::accounts::bootstrap(&ctx).map_err(api)? {
        hand_over_first_start(&settings, &b)?;
    }
    let waf = match &settings.waf_rules {
        Some(path) => coffer_http::Waf::from_json(
            &std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?,
        )
        .map_err(anyhow::Error::msg)?,
        None => coffer_http::Waf::default_rules(),
    };
    // The secret key exists from the first start on, so that every node of a cluster can be
    // given a copy of the same file before any credential is stored.
    coffer_service::sources::SecretKey::read_or_make(&settings.secret_key_file)
        .map_err(api)
        .with_context(|| format!("the secret key file {}", settings.secret_key_file.display()))?;
    plug_in_areas(&ctx);
    spawn_housekeeping(ctx.clone());
    coffer_service::content::jobs::spawn(ctx.clone()).context("starting the job worker")?;
    let _delivery = coffer_delivery::spawn(ctx.db.clone(), settings.delivery.clone())
        .context("starting webhook delivery")?;
    let _mail = match settings.mail_config(&ctx.node) {
        Some(m) => Some(
            coffer_delivery::mail::spawn(ctx.db.clone(), m, &ctx.config.message_domain())
                .context("starting the mail sender")?,
        ),
        None => {
            log::info!("no SMTP relay configured: outgoing mail stays in the mail_outbox table");
            None
        }
    };
    let _sftp = match &settings.sftp {
        Some((listen, config)) => {
            let l = std::net::TcpListener::bind(listen)
                .with_context(|| format!("binding the SFTP address {listen}"))?;
            Some(
                coffer_sftp::spawn(ctx.clone(), l, config.clone())
                    .context("starting the SFTP server")?,
            )
        }
        None => None,
    };
    let tls = match &settings.tls {
        Some((cert, key)) => Some(coffer_http::plumbing::tls::Tls::load(cert, key)?),
        None => None,
    };
    let listener = std::net::TcpListener::bind(&settings.listen)
        .with_context(|| format!("binding {}", settings.listen))?;
    let addr = listener.local_addr()?;
    log::info!(
        "Coffer listening on {}://{addr} (base URL {}, database {})",
        if tls.is_some() { "https" } else { "http" },
        settings.base_url,
        settings.database_url
    );
    let mut state = coffer_http::AppState::new(ctx, waf);
    state.body_timeout = settings.body_timeout;
    let workers = settings.workers;
    actix_web::rt::System::new().block_on(async move {
        #[cfg(unix)]
        actix_web::rt::spawn(reload_on_hangup(tls.clone()));
        coffer_http::server_with_tls(state, listener, workers, tls)?.await
    })?;
    Ok(())
}

/// Reads the TLS certificate and key again on each `SIGHUP`: new connections get the new pair,
/// open ones keep theirs. A pair that does not load leaves the one in use, and the log says why.
#[cfg(unix)]
async fn reload_on_hangup(tls: Option<std::sync::Arc<coffer_http::plumbing::tls::Tls>>) {
    use actix_web::rt::signal::unix::{signal, SignalKind};
    let mut hangup = match signal(SignalKind::hangup()) {
        Ok(s) => s,
        Err(e) => {
            log::warn!("SIGHUP cannot be handled ({e}): the TLS certificate is not reloaded");
            return;
        }
    };
    while hangup.recv().await.is_some() {
        match &tls {
            None => log::info!("SIGHUP: no TLS certificate to reload (plain HTTP)"),
            Some(tls) => match tls.reload() {
                Ok(()) => log::info!("SIGHUP: the TLS certificate and key were reloaded"),
                Err(e) => log::error!("SIGHUP: keeping the TLS certificate in use: {e}"),
            },
        }
    }
}

/// The file the first-start credentials go to when stdout is not a terminal.
const FIRST_START_FILE: &str = "first-start-credentials.txt";

/// Hands the first-start credentials to the operator: on the terminal when there is one, else
/// (a service whose stdout goes to a journal) in a file of the data directory that only its
/// owner can read, whose path is logged.
fn hand_over_first_start(
    s: &Settings,
    b: &coffer_service::identity::accounts::Bootstrap,
) -> Result<()> {
    use std::io::IsTerminal;
    let text = first_start_text(s, b);
    if std::io::stdout().is_terminal() {
        println!("{text}");
        return Ok(());
    }
    let path = s.data_dir.join(FIRST_START_FILE);
    write_owner_only(&path, &text).with_context(|| {
        format!(
            "writing the first-start credentials to {} (they are lost: create an administrator \
             with `cofferd user create --role system-admin` and a client with `cofferd client create`)",
            path.display()
        )
    })?;
    log::warn!(
        "first start: the administrator's and the first-party client's credentials are in {} \
         (readable by its owner only); read them, then delete the file",
        path.display()
    );
    Ok(())
}

/// Writes a new file that only its owner may read or write. It is created with that mode, so
/// it is never readable by others, not even briefly; an older file of the name is replaced.
fn write_owner_only(path: &std::path::Path, text: &str) -> Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
    }
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    // `create_new` refuses an existing file or symlink, so the mode below is the file's mode.
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    Ok(())
}

fn first_start_text(s: &Settings, b: &coffer_service::identity::accounts::Bootstrap) -> String {
    format!(
        "\nCoffer first start: an administrator and a first-party client were created.\n\
         These credentials are given only this once.\n\n  \
         administrator  {email}\n  password       {pw}\n  client_id      {cid}\n  client_secret  {secret}\n\n\
         Get an access token:\n  curl -s {base}/oauth/token -d grant_type=password \\\n    \
         --data-urlencode username={email} --data-urlencode 'password={pw}' \\\n    \
         -d client_id={cid} -d client_secret={secret}\n\n\
         Sign in with a browser: {base}/oauth/authorize?client_id={cid}&response_type=code&redirect_uri={redirect}\n",
        email = b.admin_email,
        pw = b.admin_password,
        cid = b.client_id,
        secret = b.client_secret,
        base = s.base_url,
        redirect = b.redirect_uri,
    )
}

/// Plugs the areas into the content core before the server and the worker start: the job kinds
/// the worker runs (the core's own and each area's) and what an upload onto a target (a draft
/// email, a request-file link) completes into (docs/architecture.md, "Areas of the service
/// layer"). An area left out here runs nothing in the background and takes no upload.
fn plug_in_areas(ctx: &Ctx) {
    ctx.jobs.register(coffer_service::content::jobs::KINDS);
    ctx.jobs.register(coffer_service::web_forms::drafts::JOBS);
    ctx.jobs.register(coffer_service::mail::outbox::JOBS);
    ctx.jobs
        .register(coffer_service::notifications::deliver::JOBS);
    ctx.jobs.register(coffer_service::search::index::JOBS);
    ctx.jobs.register(coffer_service::dli::upkeep::JOBS);
    ctx.jobs.register(coffer_service::sources::transfer::JOBS);
    ctx.jobs.register(coffer_service::dli::exports::JOBS);
    ctx.upload_completion
        .set(coffer_service::mail::attach_uploaded);
    ctx.upload_completion
        .add(coffer_service::request_files::TARGET);
}

/// Deletes expired tokens and one-time records every hour.
fn spawn_housekeeping(ctx: Ctx) {
    std::thread::Builder::new()
        .name("coffer-housekeeping".into())
        .spawn(move || loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
            let now = coffer_service::now();
            let r = ctx.write(|c| {
                let a = coffer_store::tokens::purge_expired(c, now)
                    .map_err(coffer_service::Error::from)?;
                let b = coffer_store::grants::purge_expired(c, now)
                    .map_err(coffer_service::Error::from)?;
                let r = coffer_store::password_resets::purge_expired(c, now)
                    .map_err(coffer_service::Error::from)?;
                Ok(a + b + r)
            });
            match r {
                Ok(n) => log::debug!("housekeeping removed {n} expired records"),
                Err(e) => log::warn!("housekeeping failed: {e}"),
            }
        })
        .ok();
}
