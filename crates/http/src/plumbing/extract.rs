//! Request extractors. Authorization lives in these types: a handler that takes [`SystemAdmin`]
//! cannot be reached by anyone else, whatever its body does. The role extractors yield the
//! service's permissions (`coffer_service::platform::auth::SystemAdmin`, …), which only the role
//! check builds; handlers pass them to the service functions that require them.

use crate::plumbing::error::RestError;
use crate::plumbing::state::{blocking, AppState};
use actix_web::dev::Payload;
use actix_web::web::{Bytes, Data};
use actix_web::{FromRequest, HttpMessage, HttpRequest};
use coffer_errors::{ApiError, ErrorCode};
use coffer_service::platform::auth;
use futures_util::StreamExt;
use std::future::Future;
use std::pin::Pin;

type BoxFut<T> = Pin<Box<dyn Future<Output = Result<T, RestError>>>>;

fn state(req: &HttpRequest) -> Result<Data<AppState>, RestError> {
    req.app_data::<Data<AppState>>()
        .cloned()
        .ok_or_else(|| coffer_errors::Error::internal("application state missing").into())
}

/// The bearer token of the `Authorization` header.
pub fn bearer(req: &HttpRequest) -> Option<String> {
    let v = req.headers().get("authorization")?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_string())
}

/// The cookie of a browser session.
pub const SESSION_COOKIE: &str = "coffer_session";
/// The cookie with the CSRF token, which the page echoes in `X-XSRF-TOKEN`.
pub const CSRF_COOKIE: &str = "XSRF-TOKEN";

/// Why a bearer token was refused, for the `WWW-Authenticate` answer (RFC 6750 §3.1) that the
/// response layer ([`crate::plumbing::middleware::log_and_headers`]) writes: a client that
/// reads `invalid_token` knows to refresh or sign in again. A request without a token gets the
/// plain `Bearer` challenge (no error code), as the RFC asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Challenge {
    /// The token is unknown, malformed, expired or revoked (401).
    InvalidToken,
    /// The token is valid but its scope does not cover the call (403).
    InsufficientScope,
}

impl Challenge {
    /// Notes the challenge for a bearer token that `authenticate` refused with `status`: 401
    /// is a token that is not valid, 403 one whose scope does not cover the call (the only
    /// 403 it answers).
    pub fn record(req: &HttpRequest, status: u16) {
        let challenge = match status {
            401 => Challenge::InvalidToken,
            403 => Challenge::InsufficientScope,
            _ => return,
        };
        req.extensions_mut().insert(challenge);
    }

    /// The header's value.
    pub fn header(self) -> &'static str {
        match self {
            Challenge::InvalidToken => {
                "Bearer realm=\"coffer\", error=\"invalid_token\", error_description=\"The access \
                 token is invalid, expired or revoked; refresh it or sign in again\""
            }
            Challenge::InsufficientScope => {
                "Bearer realm=\"coffer\", error=\"insufficient_scope\", error_description=\"The \
                 access token's scope does not cover this call\""
            }
        }
    }
}

/// Any caller with a valid access token whose scope covers the call, or with a browser session
/// (and, for calls that change state, the CSRF token).
pub struct Caller(pub coffer_service::platform::auth::Caller);

impl FromRequest for Caller {
    type Error = RestError;
    type Future = BoxFut<Self>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let st = state(req);
        let token = bearer(req);
        let method = req.method().to_string();
        let path = req.path().to_string();
        let cached = req
            .extensions()
            .get::<coffer_service::platform::auth::Caller>()
            .cloned();
        // Without a bearer token, a browser session: its cookie, and the CSRF token as sent in
        // the header and in its cookie.
        let session = req.cookie(SESSION_COOKIE).map(|c| c.value().to_string());
        let csrf_header = req
            .headers()
            .get("x-xsrf-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let csrf_cookie = req.cookie(CSRF_COOKIE).map(|c| c.value().to_string());
        let req = req.clone();
        Box::pin(async move {
            if let Some(c) = cached {
                return Ok(Caller(c));
            }
            let st = st?;
            let caller = match (token, session) {
                (Some(token), _) => {
                    let found = blocking(&st, move |ctx| {
                        coffer_service::platform::auth::authenticate(ctx, &token, &method, &path)
                    })
                    .await;
                    if let Err(e) = &found {
                        Challenge::record(&req, e.0.status);
                    }
                    found?
                }
                (None, Some(session)) => {
                    blocking(&st, move |ctx| {
                        coffer_service::identity::sessions::authenticate(
                            ctx,
                            &session,
                            csrf_header.as_deref(),
                            csrf_cookie.as_deref(),
                            &method,
                            &path,
                        )
                    })
                    .await?
                }
                (None, None) => return Err(RestError(ApiError::new(ErrorCode::AuthUnauthorized))),
            };
            req.extensions_mut().insert(caller.clone());
            Ok(Caller(caller))
        })
    }
}

/// A caller (as [`Caller`]), or, with no credentials at all and a `ref` in the query, whoever
/// holds a reference: the link of a `no_auth` email (the reads of `/rest/mail/{id}`), or a
/// web-form submission's (the chunks of its public upload). The reference is only carried
/// here; the service checks it.
pub enum CallerOrRef {
    Caller(Box<coffer_service::platform::auth::Caller>),
    Reference {
        reference: String,
        client_ip: Option<String>,
    },
}

impl FromRequest for CallerOrRef {
    type Error = RestError;
    type Future = BoxFut<Self>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let credentials =
            req.headers().contains_key("authorization") || req.cookie(SESSION_COOKIE).is_some();
        let reference = serde_urlencoded::from_str::<Vec<(String, String)>>(req.query_string())
            .ok()
            .and_then(|q| q.into_iter().find(|(k, _)| k == "ref").map(|(_, v)| v));
        if let (false, Some(reference)) = (credentials, reference) {
            let client_ip = state(req).ok().and_then(|st| st.client_ip(req));
            return Box::pin(async move {
                Ok(CallerOrRef::Reference {
                    reference,
                    client_ip,
                })
            });
        }
        let caller = Caller::from_request(req, payload);
        Box::pin(async move {
            let Caller(c) = caller.await?;
            Ok(CallerOrRef::Caller(Box::new(c)))
        })
    }
}

/// A caller when the request carries credentials (checked as [`Caller`]: bad ones are 401), or
/// no one: the capability reads that answer without a bearer token (web forms), with the
/// client's address for their throttle.
pub enum MaybeCaller {
    Caller(Box<coffer_service::platform::auth::Caller>),
    Anonymous { client_ip: Option<String> },
}

impl FromRequest for MaybeCaller {
    type Error = RestError;
    type Future = BoxFut<Self>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let credentials =
            req.headers().contains_key("authorization") || req.cookie(SESSION_COOKIE).is_some();
        if !credentials {
            let client_ip = state(req).ok().and_then(|st| st.client_ip(req));
            return Box::pin(async move { Ok(MaybeCaller::Anonymous { client_ip }) });
        }
        let caller = Caller::from_request(req, payload);
        Box::pin(async move {
            let Caller(c) = caller.await?;
            Ok(MaybeCaller::Caller(Box::new(c)))
        })
    }
}

macro_rules! role_extractor {
    ($(#[$doc:meta])* $name:ident, $code:expr) => {
        $(#[$doc])*
        pub struct $name(pub auth::$name);

        impl FromRequest for $name {
            type Error = RestError;
            type Future = BoxFut<Self>;

            fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
                let caller = Caller::from_request(req, payload);
                Box::pin(async move {
                    let Caller(c) = caller.await?;
                    auth::$name::check(c)
                        .map($name)
                        .ok_or_else(|| RestError(ApiError::new($code)))
                })
            }
        }
    };
}

role_extractor!(
    /// A system administrator; anyone else gets 403 `ERR_ACCESS_SYSTEM_ADMIN`.
    SystemAdmin, ErrorCode::AccessSystemAdmin
);
role_extractor!(
    /// An account administrator (system or helpdesk administrator), for `/rest/admin/users*`;
    /// anyone else gets 403 `ERR_ACCESS_ADMIN`.
    AccountAdmin, ErrorCode::AccessAdmin
);
role_extractor!(
    /// A system or application administrator (the client registry); else 403 `ERR_ACCESS_USER`.
    AppAdmin, ErrorCode::AccessUser
);
role_extractor!(
    /// Any administrator (system, application or helpdesk), for `/rest/admin/sharedMailboxes*`;
    /// anyone else gets 403 `ERR_ACCESS_ADMIN`.
    AnyAdmin, ErrorCode::AccessAdmin
);
role_extractor!(
    /// A caller whose account is internal (shared mailboxes); anyone else gets 403
    /// `ERR_NOT_INTERNAL_DOMAIN`.
    InternalCaller, ErrorCode::NotInternalDomain
);

/// An account administrator (as [`AccountAdmin`]) for the SSH-key calls under
/// `/rest/admin/users/{id}/userSshPublicKeys`, whose interface answers anyone else 403
/// `ERR_ACCESS_USER` (not `ERR_ACCESS_ADMIN` as the other `/rest/admin/users*` calls do).
pub struct KeyAdmin(pub auth::AccountAdmin);

impl FromRequest for KeyAdmin {
    type Error = RestError;
    type Future = BoxFut<Self>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let caller = Caller::from_request(req, payload);
        Box::pin(async move {
            let Caller(c) = caller.await?;
            auth::AccountAdmin::check(c).map(KeyAdmin).ok_or_else(|| {
                RestError(ApiError::new(ErrorCode::AccessUser).with_message(
                    "Insufficient access permissions (a system or helpdesk administrator's call).",
                ))
            })
        })
    }
}

/// A user administrator (system or helpdesk administrator), who keeps the organisation's
/// external distribution lists; anyone else gets 403 `ERR_ACCESS_DENIED` with a `redirectUrl`
/// (the server's home page), as the interface gives it for those calls.
pub struct UserAdmin(pub auth::AccountAdmin);

impl FromRequest for UserAdmin {
    type Error = RestError;
    type Future = BoxFut<Self>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let caller = Caller::from_request(req, payload);
        let home = state(req).map(|st| format!("{}/", st.base_url()));
        Box::pin(async move {
            let Caller(c) = caller.await?;
            match auth::AccountAdmin::check(c) {
                Some(admin) => Ok(UserAdmin(admin)),
                None => Err(RestError(
                    ApiError::new(ErrorCode::AccessDenied)
                        .with_message("Access denied (a system or helpdesk administrator's call).")
                        .with_redirect_url(home?),
                )),
            }
        })
    }
}

/// The query string as ordered pairs (decoded), for the list grammar.
pub struct QueryPairs(pub Vec<(String, String)>);

impl FromRequest for QueryPairs {
    type Error = RestError;
    type Future = std::future::Ready<Result<Self, RestError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let q = req.query_string();
        std::future::ready(
            serde_urlencoded::from_str::<Vec<(String, String)>>(q)
                .map(QueryPairs)
                .map_err(|_| {
                    RestError(
                        ApiError::new(ErrorCode::RequestInvalidFilter)
                            .with_message("The query string is malformed."),
                    )
                }),
        )
    }
}

/// The largest JSON body accepted.
pub const MAX_JSON_BODY: usize = 1024 * 1024;

/// Reads a body up to `limit` bytes; a larger one answers 413, one that does not arrive within
/// the body timeout (see [`crate::plumbing::middleware::body_deadline`]) 408.
pub async fn read_body<S>(payload: &mut S, limit: usize) -> Result<Bytes, RestError>
where
    S: futures_util::Stream<Item = Result<Bytes, actix_web::error::PayloadError>> + Unpin,
{
    let mut buf = actix_web::web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| {
            if crate::plumbing::middleware::is_body_timeout(&e) {
                return RestError(ApiError::new(ErrorCode::RequestTimeout));
            }
            RestError(
                ApiError::new(ErrorCode::RequestInvalidJson)
                    .with_message("The request body could not be read."),
            )
        })?;
        if buf.len() + chunk.len() > limit {
            return Err(RestError(ApiError::new(ErrorCode::RequestTooLarge)));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// The request's `Content-Type`, lower-cased.
pub fn content_type(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase)
}

/// Whether a content type names JSON: `application/json` or any `+json` type (absent: assumed).
pub fn is_json(content_type: Option<&str>) -> bool {
    content_type.is_none_or(|ct| ct.starts_with("application/json") || ct.contains("+json"))
}

/// A numeric path id; anything else is an unknown entity (404).
pub fn int_id(raw: &str) -> Result<i64, RestError> {
    raw.parse::<i64>()
        .ok()
        .filter(|v| *v > 0)
        .ok_or_else(|| RestError(ApiError::new(ErrorCode::EntityNotFound)))
}
