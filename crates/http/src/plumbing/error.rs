//! Rendering errors: the REST envelope for `/rest`, the OAuth body for the token endpoint. An
//! internal failure is logged with the request's id and its cause chain ([`log_internal`]) and
//! answered as a generic 500 that carries neither.

use crate::plumbing::middleware::RequestId;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use coffer_errors::{ApiError, Error, InternalError, OAuthError};
use std::fmt;

/// Logs an internal failure: the id of the request being handled (the one in its access-log
/// line and `X-Request-Id` header; `-` outside a request) and the cause with every `source()`.
pub fn log_internal(cause: &InternalError) {
    log_internal_for(RequestId::current(), cause);
}

/// [`log_internal`] for a request whose id was taken earlier (a response body streamed after
/// the handler returned runs outside the request's task).
pub fn log_internal_for(id: Option<RequestId>, cause: &InternalError) {
    let id = id.map_or_else(|| "-".to_string(), |id| id.to_string());
    log::error!("{id} internal error: {}", cause.report());
}

/// An error answered in the REST envelope.
#[derive(Debug)]
pub struct RestError(pub ApiError);

impl fmt::Display for RestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl ResponseError for RestError {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.0.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        rest_error(&self.0)
    }
}

/// The REST envelope response for an error.
pub fn rest_error(e: &ApiError) -> HttpResponse {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = HttpResponse::build(status);
    if e.status == 401 {
        r.insert_header(("WWW-Authenticate", "Bearer realm=\"coffer\""));
    }
    if let Some(secs) = e.retry_after {
        r.insert_header(("Retry-After", secs.max(1).to_string()));
    }
    let mut res = r.json(e.body());
    if e.status == 490 {
        res.head_mut().reason = Some("Request blocked by WAF");
    }
    res
}

impl From<Error> for RestError {
    fn from(e: Error) -> Self {
        if let Error::Internal(cause) = &e {
            log_internal(cause);
        }
        RestError(e.to_api())
    }
}

impl From<ApiError> for RestError {
    fn from(e: ApiError) -> Self {
        RestError(e)
    }
}

impl From<coffer_errors::ErrorCode> for RestError {
    fn from(c: coffer_errors::ErrorCode) -> Self {
        RestError(ApiError::new(c))
    }
}

/// The OAuth error response: 400 `{error, error_description}` with `Cache-Control: no-store`.
pub fn oauth_error(e: &OAuthError) -> HttpResponse {
    if let Some(secs) = e.retry_after {
        return HttpResponse::TooManyRequests()
            .insert_header(("Retry-After", secs.max(1).to_string()))
            .insert_header(("Cache-Control", "no-store"))
            .json(e);
    }
    HttpResponse::BadRequest()
        .insert_header(("Cache-Control", "no-store"))
        .insert_header(("Pragma", "no-cache"))
        .json(e)
}
