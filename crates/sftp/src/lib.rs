//! Coffer's SFTP server: a front-end beside `coffer-http`, on `russh` (SSH) and `russh-sftp`
//! (the SFTP subsystem), calling the same service use cases (`coffer_service::sftp`).
//!
//! Off unless configured (`cofferd serve` starts it when `COFFER_SFTP_LISTEN` is set). The host
//! key is made by the first node that starts and stored in the database, so every node of a
//! cluster answers with the same one. A user signs in with a registered live key, the username
//! being the account's email, and only while SFTP is allowed for them; with `password` on, also
//! with the account's password (never for an account with a second factor). Refused keys and
//! passwords count against the web sign-in's throttle, per account and per address. Nothing is
//! cached: each sign-in reads the key and the account afresh, and each open asks again whether
//! SFTP is still allowed.
//!
//! Only the `sftp` subsystem is served: no shell, no command, no port or agent forwarding, no
//! X11. A connection that has not signed in within the login time-out is closed, as is one idle
//! for the idle time-out. The window and packet sizes are raised from russh's defaults so bulk
//! transfers are not held back by flow control.

mod path;
mod session;

use coffer_service::Ctx;
use russh::keys::{HashAlg, PrivateKey};
use russh::server::{Auth, ChannelOpenHandle, Msg, Session};
use russh::{Channel, ChannelId, MethodKind, MethodSet};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How the SFTP server runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Whether an account's password signs in too (keys always do).
    pub password: bool,
    /// How long a connection may take to sign in.
    pub login_timeout: Duration,
    /// How long a signed-in connection may stay silent.
    pub idle_timeout: Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            password: false,
            login_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(900),
        }
    }
}

/// A running SFTP server: its address; dropping it leaves the server running with the process.
pub struct Running {
    pub addr: SocketAddr,
    _thread: std::thread::JoinHandle<()>,
}

/// The SSH configuration: the host key, the sign-in methods, the time-outs, and flow control
/// sized for bulk transfers.
fn ssh_config(host_key: PrivateKey, config: &Config) -> russh::server::Config {
    let mut methods = vec![MethodKind::PublicKey];
    if config.password {
        methods.push(MethodKind::Password);
    }
    russh::server::Config {
        server_id: russh::SshId::Standard("SSH-2.0-Coffer".into()),
        methods: MethodSet::from(&methods[..]),
        auth_rejection_time: Duration::from_millis(300),
        auth_rejection_time_initial: Some(Duration::ZERO),
        keys: vec![host_key],
        inactivity_timeout: Some(config.idle_timeout),
        keepalive_interval: Some(Duration::from_secs(60)),
        max_auth_attempts: 6,
        window_size: 16 * 1024 * 1024,
        maximum_packet_size: 256 * 1024,
        channel_buffer_size: 256,
        event_buffer_size: 256,
        nodelay: true,
        ..Default::default()
    }
}

/// Starts the server on `listener` (already bound) in a thread of its own with its own
/// runtime: reads or makes the host key first, so a failure to do so fails the start.
pub fn spawn(
    ctx: Ctx,
    listener: std::net::TcpListener,
    config: Config,
) -> std::io::Result<Running> {
    let key = coffer_service::sftp::host_key(&ctx)
        .map_err(|e| std::io::Error::other(format!("the SFTP host key: {e}")))?;
    let key = PrivateKey::from_openssh(&key)
        .map_err(|e| std::io::Error::other(format!("the SFTP host key does not read: {e}")))?;
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let ssh = Arc::new(ssh_config(key, &config));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("sftp")
        .enable_all()
        .build()?;
    let thread = std::thread::Builder::new()
        .name("sftp-accept".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        log::error!("sftp: cannot listen: {e}");
                        return;
                    }
                };
                loop {
                    match listener.accept().await {
                        Ok((stream, peer)) => {
                            let _ = stream.set_nodelay(true);
                            tokio::spawn(connection(
                                ctx.clone(),
                                ssh.clone(),
                                config.clone(),
                                stream,
                                peer,
                            ));
                        }
                        Err(e) => {
                            log::warn!("sftp: accept failed: {e}");
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                }
            })
        })?;
    log::info!("SFTP server listening on {addr}");
    Ok(Running {
        addr,
        _thread: thread,
    })
}

/// One client connection, closed when it has not signed in within the login time-out.
async fn connection(
    ctx: Ctx,
    ssh: Arc<russh::server::Config>,
    config: Config,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
) {
    let signed_in = Arc::new(AtomicBool::new(false));
    let mut ctx = ctx;
    ctx.protocol = Some("sftp");
    let handler = Connection {
        ctx,
        config: config.clone(),
        peer: peer.ip().to_string(),
        user_id: None,
        signed_in: signed_in.clone(),
        channels: HashMap::new(),
    };
    let start = russh::server::run_stream(ssh, stream, handler);
    let session = match tokio::time::timeout(config.login_timeout, start).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            log::debug!("sftp: {peer}: {e}");
            return;
        }
        Err(_) => return,
    };
    let handle = session.handle();
    let watch = signed_in.clone();
    let login = config.login_timeout;
    let timer = tokio::spawn(async move {
        tokio::time::sleep(login).await;
        if !watch.load(Ordering::SeqCst) {
            let _ = handle
                .disconnect(
                    russh::Disconnect::ByApplication,
                    "sign-in took too long".into(),
                    "en".into(),
                )
                .await;
        }
    });
    if let Err(e) = session.await {
        log::debug!("sftp: {peer}: {e}");
    }
    timer.abort();
}

/// The SSH side of a connection: sign-in and the session channel that carries SFTP.
struct Connection {
    ctx: Ctx,
    config: Config,
    peer: String,
    user_id: Option<String>,
    signed_in: Arc<AtomicBool>,
    channels: HashMap<ChannelId, Channel<Msg>>,
}

impl Connection {
    /// Counts a refused sign-in and holds the answer back as the throttle says.
    async fn refused(&self, email: &str) -> Result<Auth, russh::Error> {
        let (email, ip) = (email.to_string(), self.peer.clone());
        let wait = self
            .ctx
            .blocking(move |ctx| coffer_service::sftp::key_refused(ctx, &email, Some(&ip)))
            .await
            .unwrap_or_default();
        tokio::time::sleep(wait).await;
        Ok(Auth::reject())
    }

    /// The account this key signs in now, unless the throttle has locked the account or the
    /// address.
    async fn key_user(&self, email: &str, key: &russh::keys::PublicKey) -> Option<String> {
        let fingerprint = key.fingerprint(HashAlg::Sha256).to_string();
        let (email, ip) = (email.to_string(), self.peer.clone());
        self.ctx
            .blocking(move |ctx| {
                if coffer_service::sftp::locked_out(ctx, &email, Some(&ip))? {
                    return Ok(None);
                }
                coffer_service::sftp::sign_in_by_key(ctx, &email, &fingerprint)
            })
            .await
            .unwrap_or_else(|e| {
                log::error!("sftp: sign-in failed: {e}");
                None
            })
            .map(|u| u.id)
    }
}

impl russh::server::Handler for Connection {
    type Error = russh::Error;

    async fn auth_publickey_offered(
        &mut self,
        user: &str,
        offer: russh::server::PublicKeyOffer<'_>,
    ) -> Result<Auth, Self::Error> {
        match self.key_user(user, offer.public_key).await {
            Some(_) => Ok(Auth::Accept),
            None => self.refused(user).await,
        }
    }

    async fn auth_publickey(
        &mut self,
        user: &str,
        key: russh::server::VerifiedPublicKey<'_>,
    ) -> Result<Auth, Self::Error> {
        // Read again: the key or the account may have gone since it was offered.
        match self.key_user(user, key.public_key).await {
            Some(id) => {
                self.user_id = Some(id);
                self.signed_in.store(true, Ordering::SeqCst);
                let email = user.to_string();
                let _ = self
                    .ctx
                    .blocking(move |ctx| coffer_service::sftp::signed_in(ctx, &email))
                    .await;
                Ok(Auth::Accept)
            }
            None => self.refused(user).await,
        }
    }

    async fn auth_password(&mut self, user: &str, password: &str) -> Result<Auth, Self::Error> {
        if !self.config.password {
            return self.refused(user).await;
        }
        let (email, pw, ip) = (user.to_string(), password.to_string(), self.peer.clone());
        let found = self
            .ctx
            .blocking(move |ctx| {
                coffer_service::sftp::sign_in_by_password(ctx, &email, &pw, Some(&ip))
            })
            .await
            .unwrap_or_else(|e| {
                log::error!("sftp: sign-in failed: {e}");
                None
            });
        match found {
            Some(u) => {
                self.user_id = Some(u.id);
                self.signed_in.store(true, Ordering::SeqCst);
                Ok(Auth::Accept)
            }
            // The password check counted the failure and slowed the answer.
            None => Ok(Auth::reject()),
        }
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        if self.user_id.is_some() && self.channels.len() < 4 {
            self.channels.insert(channel.id(), channel);
            reply.accept().await;
        }
        Ok(())
    }

    async fn subsystem_request(
        &mut self,
        channel_id: ChannelId,
        name: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        let (Some(user), true) = (self.user_id.clone(), name == "sftp") else {
            session.channel_failure(channel_id)?;
            return Ok(());
        };
        let Some(channel) = self.channels.remove(&channel_id) else {
            session.channel_failure(channel_id)?;
            return Ok(());
        };
        session.channel_success(channel_id)?;
        let sftp = session::Session::new(self.ctx.clone(), user);
        let cfg = russh_sftp::server::Config {
            max_client_packet_len: 512 * 1024,
        };
        russh_sftp::server::run_with_config(channel.into_stream(), sftp, cfg).await;
        Ok(())
    }

    async fn shell_request(
        &mut self,
        channel: ChannelId,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_failure(channel)?;
        Ok(())
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        _data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_failure(channel)?;
        Ok(())
    }

    async fn pty_request(
        &mut self,
        channel: ChannelId,
        _term: &str,
        _col_width: u32,
        _row_height: u32,
        _pix_width: u32,
        _pix_height: u32,
        _modes: &[(russh::Pty, u32)],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_failure(channel)?;
        Ok(())
    }

    async fn channel_eof(
        &mut self,
        channel: ChannelId,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        // The client has sent all it will (OpenSSH's clients do so once every answer came): the
        // session ends as a program's would, with its exit status first. `scp`, which speaks
        // SFTP, takes a session that ends without one for a failure and exits 1 without a word,
        // though every byte arrived.
        session.exit_status_request(channel, 0)?;
        session.eof(channel)?;
        session.close(channel)?;
        Ok(())
    }
}
