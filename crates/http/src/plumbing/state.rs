//! What every handler shares: the services' context and the HTTP layer's own settings.

use crate::plumbing::waf::Waf;
use coffer_service::Ctx;
use std::sync::Arc;
use std::time::Duration;

/// How long a request body may take to arrive, unless configured.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Clone)]
pub struct AppState {
    pub ctx: Ctx,
    /// `x-<brand>-version`, lower-cased.
    pub version_header: String,
    /// The same header as the brand is spelled (`X-Coffer-Version`), for messages.
    pub version_header_shown: String,
    pub waf: Arc<Waf>,
    /// Whether cookies get the `Secure` attribute (the base URL is https).
    pub secure_cookies: bool,
    /// How long a request's body may take to arrive, from the end of its headers; then 408.
    pub body_timeout: Duration,
}

impl AppState {
    pub fn new(ctx: Ctx, waf: Waf) -> AppState {
        let version_header = format!(
            "x-{}-version",
            ctx.config.version_brand.to_ascii_lowercase()
        );
        let version_header_shown = format!("X-{}-Version", ctx.config.version_brand);
        let secure_cookies = ctx.config.base_url.starts_with("https://");
        AppState {
            ctx,
            version_header,
            version_header_shown,
            waf: Arc::new(waf),
            secure_cookies,
            body_timeout: DEFAULT_BODY_TIMEOUT,
        }
    }

    /// The client's address, read through trusted reverse proxies.
    pub fn client_ip(&self, req: &actix_web::HttpRequest) -> Option<String> {
        let peer = req.peer_addr()?.ip();
        let forwarded = req
            .headers()
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok());
        Some(
            self.ctx
                .config
                .trusted_proxies
                .client_ip(peer, forwarded)
                .to_string(),
        )
    }

    pub fn base_url(&self) -> &str {
        &self.ctx.config.base_url
    }
}

/// Runs a service call on the blocking thread pool.
pub async fn blocking<T, F>(state: &AppState, f: F) -> Result<T, crate::plumbing::error::RestError>
where
    T: Send + 'static,
    F: FnOnce(&Ctx) -> coffer_service::Result<T> + Send + 'static,
{
    state.ctx.blocking(f).await.map_err(Into::into)
}
