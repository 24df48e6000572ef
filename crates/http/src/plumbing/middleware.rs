//! The layers every request passes: the request id, the access log and security headers (all
//! routes), the firewall (all routes), the body deadline (all routes), and for `/rest` the
//! removed-endpoint answers and the API version check.

use crate::plumbing::error::rest_error;
use crate::plumbing::state::AppState;
use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::web::Data;
use actix_web::{Error, HttpMessage};
use coffer_errors::{ApiError, ErrorCode};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

/// The only supported API version.
pub const API_VERSION: u32 = 28;

/// The id of one request: 64 random bits, written as 16 lowercase hex digits. Every request gets
/// a new one; an `X-Request-Id` the client sends is not taken, so an id in the logs always names
/// exactly one request and no client can choose or repeat it (a proxy that wants to correlate
/// logs records the id from the response header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestId(u64);

tokio::task_local! {
    /// The id of the request whose handling runs in this task (see [`RequestId::current`]).
    static CURRENT: RequestId;
}

impl RequestId {
    fn new() -> Self {
        RequestId(rand::random())
    }

    /// The id of the request being handled by the current task; `None` outside a request (a
    /// background job, or a response body streamed after the handler returned).
    pub fn current() -> Option<RequestId> {
        CURRENT.try_with(|id| *id).ok()
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// The response header that carries the request id.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Gives the request its id (in the request's extensions, and as [`RequestId::current`] while
/// it is handled), writes one access-log line per request (id, method, path without the query,
/// status, duration), and puts the id and the security headers on every response.
pub async fn log_and_headers(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let started = Instant::now();
    let id = RequestId::new();
    req.extensions_mut().insert(id);
    let method = req.method().clone();
    let path = req.path().to_string();
    // The pages (a download under `/mail/` sets its own sandboxing policy, which stays).
    let html = path == "/"
        || path.starts_with("/oauth/authorize")
        || path.starts_with("/oauth_callback")
        || path == coffer_service::identity::password_reset::RESET_PAGE_PATH
        || path.starts_with("/mail/")
        || path.starts_with(coffer_service::web_forms::PAGE_PREFIX);
    let secure = req
        .app_data::<Data<AppState>>()
        .is_some_and(|s| s.secure_cookies);
    // Served over Coffer's own TLS: browsers are told to keep to HTTPS.
    let tls = req.app_config().secure();
    // The id is also the `transactionId` of the activity records the request makes.
    let handled = coffer_service::audit::in_request(id.to_string(), next.call(req));
    let mut res = CURRENT.scope(id, handled).await?;
    let challenge = res
        .request()
        .extensions()
        .get::<crate::plumbing::extract::Challenge>()
        .copied();
    let h = res.headers_mut();
    if let Some(challenge) = challenge {
        h.insert(
            actix_web::http::header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge.header()),
        );
    }
    h.insert(
        HeaderName::from_static(REQUEST_ID_HEADER),
        HeaderValue::from_str(&id.to_string()).expect("hex digits are a header value"),
    );
    if tls {
        h.insert(
            HeaderName::from_static("strict-transport-security"),
            HeaderValue::from_static("max-age=31536000"),
        );
    }
    let set = |h: &mut actix_web::http::header::HeaderMap, k: &'static str, v: &'static str| {
        if !h.contains_key(k) {
            h.insert(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
    };
    set(h, "x-content-type-options", "nosniff");
    // An embedded web form's page allows any frame ancestor; `X-Frame-Options` would forbid it.
    let framable = h
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("frame-ancestors *"));
    if !framable {
        set(h, "x-frame-options", "DENY");
    }
    set(h, "referrer-policy", "no-referrer");
    set(h, "cross-origin-opener-policy", "same-origin");
    if html {
        set(h, "content-security-policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'");
    } else {
        set(
            h,
            "content-security-policy",
            "default-src 'none'; frame-ancestors 'none'",
        );
    }
    if html
        || path.starts_with("/rest")
        || path.starts_with("/oauth")
        || path.starts_with("/webhooks")
    {
        set(h, "cache-control", "no-store");
    }
    if secure {
        set(
            h,
            "strict-transport-security",
            "max-age=31536000; includeSubDomains",
        );
    }
    log::info!(
        target: "coffer::access",
        "{id} {method} {path} {} {:.1}ms",
        res.status().as_u16(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    Ok(res)
}

/// A request body whose bytes must keep arriving: when none came for the body timeout, the
/// stream ends with a timeout error, which the body readers answer 408. Every piece that arrives
/// restarts the clock, so a large upload at any reasonable rate is never cut.
struct Deadline {
    inner: Rc<RefCell<actix_web::dev::Payload>>,
    sleep: Pin<Box<actix_web::rt::time::Sleep>>,
    timeout: std::time::Duration,
    expired: bool,
}

impl futures_util::Stream for Deadline {
    type Item = Result<actix_web::web::Bytes, actix_web::error::PayloadError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.expired {
            return Poll::Ready(None);
        }
        if let Poll::Ready(item) = Pin::new(&mut *this.inner.borrow_mut()).poll_next(cx) {
            if item.is_some() {
                let next = actix_web::rt::time::Instant::now() + this.timeout;
                this.sleep.as_mut().reset(next);
            }
            return Poll::Ready(item);
        }
        if this.sleep.as_mut().poll(cx).is_ready() {
            this.expired = true;
            return Poll::Ready(Some(Err(actix_web::error::PayloadError::Io(
                std::io::Error::new(std::io::ErrorKind::TimedOut, BODY_TIMEOUT),
            ))));
        }
        Poll::Pending
    }
}

const BODY_TIMEOUT: &str = "the request body did not arrive in time";

/// Whether a body read failed because the body deadline passed.
pub fn is_body_timeout(e: &actix_web::error::PayloadError) -> bool {
    matches!(e, actix_web::error::PayloadError::Io(io) if io.kind() == std::io::ErrorKind::TimedOut)
}

/// A response body that holds the request's body until the response is sent.
pub struct HoldingBody {
    inner: actix_web::body::BoxBody,
    _request_body: Rc<RefCell<actix_web::dev::Payload>>,
}

impl MessageBody for HoldingBody {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> actix_web::body::BodySize {
        self.inner.size()
    }

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<actix_web::web::Bytes, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_next(cx)
    }
}

/// The body deadline: a request's body must start within the body timeout of the end of its
/// headers and never pause longer than it (actix-web's own timeout covers only the headers). Every body reader reads through
/// this, so JSON, forms and SCIM alike answer 408 instead of holding the connection.
///
/// The response holds the request body until it is sent: actix-web then closes a connection
/// whose body was not read to the end, where it would otherwise go on reading a dropped chunked
/// body with no time limit.
pub async fn body_deadline<B: MessageBody + 'static>(
    mut req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B, HoldingBody>>, Error> {
    let payload = req.take_payload();
    if matches!(payload, actix_web::dev::Payload::None) {
        req.set_payload(payload);
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_left_body);
    }
    let timeout = req
        .app_data::<Data<AppState>>()
        .map_or(crate::plumbing::state::DEFAULT_BODY_TIMEOUT, |s| {
            s.body_timeout
        });
    let body = Rc::new(RefCell::new(payload));
    let deadline = Deadline {
        inner: body.clone(),
        sleep: Box::pin(actix_web::rt::time::sleep(timeout)),
        timeout,
        expired: false,
    };
    req.set_payload(actix_web::dev::Payload::Stream {
        payload: Box::pin(deadline),
    });
    let res = next.call(req).await?;
    Ok(res
        .map_body(|_, b| HoldingBody {
            inner: actix_web::body::BoxBody::new(b),
            _request_body: body,
        })
        .map_into_right_body())
}

fn short_circuit<B>(req: ServiceRequest, e: &ApiError) -> ServiceResponse<EitherBody<B>> {
    req.into_response(rest_error(e)).map_into_right_body()
}

/// The firewall: a request that breaks a rule is answered 490 and goes no further.
pub async fn waf<B: MessageBody>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, Error> {
    let hit = req.app_data::<Data<AppState>>().and_then(|s| {
        let raw_path = req.uri().path();
        let query = req.uri().query().unwrap_or("");
        let headers: Vec<&[u8]> = req.headers().iter().map(|(_, v)| v.as_bytes()).collect();
        s.waf
            .check(raw_path, query, headers.iter().copied())
            .map(str::to_string)
    });
    if let Some(rule) = hit {
        log::warn!(target: "coffer::waf", "blocked {} {} by rule {rule}", req.method(), req.path());
        let e = ApiError::new(ErrorCode::RequestBlockedByWaf);
        return Ok(short_circuit(req, &e));
    }
    next.call(req)
        .await
        .map(ServiceResponse::map_into_left_body)
}

/// Endpoints the interface removed, with the call that replaces each.
const REMOVED: &[(&str, &str, &str)] = &[
    (
        "GET",
        "/rest/folders/*/path",
        "GET /rest/folders/{id} (path is part of the folder)",
    ),
    (
        "GET",
        "/rest/admin/profiles/*/users/*",
        "GET /rest/admin/profiles/{id}/users, filtered client-side",
    ),
    (
        "POST",
        "/rest/sources/*/actions/fileFromTemplate",
        "POST /rest/folders/{parent_id}/actions/fileFromTemplate",
    ),
    (
        "GET",
        "/rest/folders/members",
        "GET /rest/folders/{id}/members",
    ),
    (
        "POST",
        "/rest/sources/*/actions/lock",
        "PATCH /rest/sources/actions/lock?id:in=<ids>",
    ),
    (
        "POST",
        "/rest/sources/*/actions/unlock",
        "PATCH /rest/sources/actions/unlock?id:in=<ids>",
    ),
    (
        "DELETE",
        "/rest/mail/*/actions/read",
        "PATCH /rest/mail/actions/read?emailId:in=<ids>",
    ),
    (
        "DELETE",
        "/rest/mail/*/actions/unread",
        "PATCH /rest/mail/actions/unread?emailId:in=<ids>",
    ),
];

/// The replacement of a removed endpoint (`*` matches one path segment).
pub fn removed_replacement(method: &str, path: &str) -> Option<&'static str> {
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    REMOVED.iter().find_map(|(m, pattern, replacement)| {
        let pat: Vec<&str> = pattern.split('/').collect();
        let matches = *m == method
            && pat.len() == segs.len()
            && pat
                .iter()
                .zip(&segs)
                .all(|(p, s)| *p == "*" && !s.is_empty() || p == s);
        matches.then_some(*replacement)
    })
}

/// The version outcome of a request: `Ok` for 28, else the error to answer. The answer names
/// `header` (`X-<Brand>-Version`, as the brand is configured) and the version this server speaks,
/// so that a client sees what to send; the legacy envelope of versions 1 to 4 keeps the text those
/// clients know.
pub fn check_version(
    header: Option<&str>,
    query_version: Option<&str>,
    header_name: &str,
) -> Result<(), ApiError> {
    let Some(v) = header.or(query_version).map(str::trim) else {
        return Err(
            ApiError::new(ErrorCode::RequestApiVersionMissing).with_message(format!(
                "The API version is missing: send the header {header_name}: {API_VERSION} \
                 (or the query parameter apiVersion={API_VERSION})."
            )),
        );
    };
    match v.parse::<u32>() {
        Ok(API_VERSION) => Ok(()),
        Ok(1..=4) => Err(ApiError::new(ErrorCode::RequestVersionNotSupported).legacy()),
        _ => Err(
            ApiError::new(ErrorCode::RequestVersionNotSupported).with_message(format!(
                "The specified API version is not supported by server: it speaks version \
                 {API_VERSION} only; send the header {header_name}: {API_VERSION}."
            )),
        ),
    }
}

fn query_param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query.split('&').find_map(|kv| {
        kv.split_once('=')
            .filter(|(k, _)| *k == name)
            .map(|(_, v)| v)
    })
}

/// `/rest` gate: removed endpoints answer 404 naming their replacement, and so does a path with
/// control characters; then the version header (`X-<Brand>-Version`) or `apiVersion` query must
/// say 28.
pub async fn rest_gate<B: MessageBody>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, Error> {
    if let Some(replacement) = removed_replacement(req.method().as_str(), req.path()) {
        let e = ApiError::new(ErrorCode::RequestNotFound).with_message(format!(
            "This endpoint was removed; use {replacement} instead."
        ));
        return Ok(short_circuit(req, &e));
    }
    // The one rule for text (`coffer_domain::input::is_clean`): a path with a control character
    // names no entity, and never reaches a query of the database.
    if !coffer_domain::input::is_clean(&crate::plumbing::waf::percent_decode(req.path()), false) {
        let e = ApiError::new(ErrorCode::EntityNotFound);
        return Ok(short_circuit(req, &e));
    }
    let (header_name, shown) = req
        .app_data::<Data<AppState>>()
        .map(|s| (s.version_header.clone(), s.version_header_shown.clone()))
        .unwrap_or_default();
    let header = req
        .headers()
        .get(header_name.as_str())
        .and_then(|v| v.to_str().ok());
    let query = req.uri().query().unwrap_or("");
    if let Err(e) = check_version(header, query_param(query, "apiVersion"), &shown) {
        return Ok(short_circuit(req, &e));
    }
    next.call(req)
        .await
        .map(ServiceResponse::map_into_left_body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_outcomes() {
        let h = "X-Coffer-Version";
        assert!(check_version(Some("28"), None, h).is_ok());
        assert!(check_version(None, Some("28"), h).is_ok());
        let e = check_version(None, None, h).unwrap_err();
        assert_eq!(e.code, ErrorCode::RequestApiVersionMissing);
        assert!(e.message.contains("X-Coffer-Version: 28"), "{}", e.message);
        for v in ["5", "27", "29", "0", "abc", "-1"] {
            let e = check_version(Some(v), None, "X-Acme-Version").unwrap_err();
            assert_eq!(e.code, ErrorCode::RequestVersionNotSupported, "{v}");
            assert!(!e.legacy);
            assert!(e.message.contains("X-Acme-Version: 28"), "{}", e.message);
        }
        for v in ["1", "4"] {
            let e = check_version(Some(v), None, h).unwrap_err();
            assert!(e.legacy);
            assert_eq!(
                e.body(),
                serde_json::json!({"message": "The specified API version is not supported by server."})
            );
        }
        // The header wins over the query.
        assert!(check_version(Some("28"), Some("4"), h).is_ok());
    }

    #[test]
    fn request_ids_are_16_hex_digits_and_differ() {
        let ids: std::collections::HashSet<String> =
            (0..1000).map(|_| RequestId::new().to_string()).collect();
        assert_eq!(ids.len(), 1000);
        for id in &ids {
            assert_eq!(id.len(), 16, "{id}");
            assert!(
                id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
                "{id}"
            );
        }
        assert_eq!(RequestId(0xab).to_string(), "00000000000000ab");
        assert_eq!(
            RequestId::current(),
            None,
            "no request outside a request's task"
        );
    }

    #[test]
    fn removed_endpoints() {
        assert!(removed_replacement("GET", "/rest/folders/abc/path")
            .unwrap()
            .contains("/rest/folders/{id}"));
        assert!(removed_replacement("GET", "/rest/folders/members").is_some());
        assert!(removed_replacement("POST", "/rest/sources/1/actions/lock")
            .unwrap()
            .contains("PATCH"));
        assert!(removed_replacement("DELETE", "/rest/mail/9/actions/unread").is_some());
        assert!(removed_replacement("GET", "/rest/admin/profiles/1/users/2").is_some());
        assert!(removed_replacement("PATCH", "/rest/sources/actions/lock").is_none());
        assert!(removed_replacement("GET", "/rest/folders//path").is_none());
        assert_eq!(removed_replacement("GET", "/rest/devices"), None);
    }
}
