//! The OAuth 2.0 endpoints: `/oauth/authorize` (sign-in and consent pages), `/oauth/token`,
//! `/oauth/revoke` (RFC 7009), `/oauth/introspect` (RFC 7662), the RFC 8414 metadata, and the
//! `/oauth_callback.php` landing page.

use crate::plumbing::error::{oauth_error, RestError};
use crate::plumbing::extract::read_body;
use crate::plumbing::pages;
use crate::plumbing::state::{blocking, AppState};
use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::StatusCode;
use actix_web::web::{self, Data};
use actix_web::{HttpRequest, HttpResponse};
use coffer_errors::OAuthError;
use coffer_oauth::authorize::{AuthorizeParams, Rejection};
use coffer_service::identity::accounts::SignIn;
use coffer_service::oauth::{self as svc, AfterSignIn, TokenInput};

const CSRF_COOKIE: &str = "coffer_oauth_csrf";
/// The largest form accepted on the OAuth endpoints.
const MAX_FORM: usize = 64 * 1024;
/// The authorization request's parameters, carried through the sign-in form.
const AUTHORIZE_FIELDS: &[&str] = &[
    "client_id",
    "redirect_uri",
    "response_type",
    "scope",
    "state",
    "code_challenge",
    "code_challenge_method",
    "m",
];

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/oauth/authorize")
            .route(web::get().to(authorize))
            .route(web::post().to(sign_in)),
    )
    .service(web::resource("/oauth/consent").route(web::post().to(consent)))
    .service(web::resource("/oauth/tfa").route(web::post().to(second_factor)))
    .service(web::resource("/oauth/password").route(web::post().to(password_step)))
    .service(web::resource("/oauth/token").route(web::post().to(token)))
    .service(web::resource("/oauth/revoke").route(web::post().to(revoke)))
    .service(web::resource("/oauth/introspect").route(web::post().to(introspect)))
    .service(
        web::resource("/.well-known/oauth-authorization-server").route(web::get().to(metadata)),
    )
    .service(web::resource("/oauth_callback.php").route(web::get().to(callback)));
}

/// Decoded pairs, refusing a parameter given twice or a value with control characters.
fn unique_pairs(raw: &str) -> Result<Vec<(String, String)>, String> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw)
        .map_err(|_| "The request parameters are malformed.".to_string())?;
    for (i, (k, v)) in pairs.iter().enumerate() {
        if pairs[..i].iter().any(|(k2, _)| k2 == k) {
            return Err(format!("The parameter `{k}` was given more than once."));
        }
        // The one rule for text (`coffer_domain::input::is_clean`), as this area's 400.
        if !coffer_domain::input::is_clean(v, false) {
            return Err(format!(
                "The parameter `{k}` must not contain control characters."
            ));
        }
    }
    Ok(pairs)
}

/// The form of a page's POST, or the error page for a malformed one.
pub(crate) async fn page_form(
    payload: &mut web::Payload,
) -> Result<Result<Vec<(String, String)>, HttpResponse>, RestError> {
    let body = read_body(payload, MAX_FORM).await?;
    Ok(unique_pairs(&String::from_utf8_lossy(&body))
        .map_err(|m| pages::error(StatusCode::BAD_REQUEST, &m)))
}

pub(crate) fn param(pairs: &[(String, String)], name: &str) -> Option<String> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

fn authorize_params(pairs: &[(String, String)]) -> AuthorizeParams {
    let p = |n: &str| param(pairs, n).filter(|v| !v.is_empty());
    AuthorizeParams {
        client_id: p("client_id"),
        redirect_uri: p("redirect_uri"),
        response_type: p("response_type"),
        scope: p("scope"),
        state: p("state"),
        code_challenge: p("code_challenge"),
        code_challenge_method: p("code_challenge_method"),
        mobile: p("m").as_deref() == Some("1"),
    }
}

fn carried(pairs: &[(String, String)]) -> Vec<(&str, &str)> {
    pairs
        .iter()
        .filter(|(k, _)| AUTHORIZE_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

fn csrf_cookie(st: &AppState, value: &str) -> Cookie<'static> {
    pages::csrf_cookie(
        CSRF_COOKIE,
        value,
        "/oauth",
        st.secure_cookies,
        SameSite::Strict,
    )
}

fn csrf_ok(req: &HttpRequest, form_value: Option<&str>) -> bool {
    pages::csrf_matches(req, CSRF_COOKIE, form_value)
}

/// Reads a step's form and checks its CSRF value; a failure is the page to answer with.
async fn step_form(
    req: &HttpRequest,
    payload: &mut web::Payload,
    expired: &str,
) -> Result<Result<(Vec<(String, String)>, String), HttpResponse>, RestError> {
    let pairs = match page_form(payload).await? {
        Ok(p) => p,
        Err(page) => return Ok(Err(page)),
    };
    let csrf = param(&pairs, "csrf").unwrap_or_default();
    if !csrf_ok(req, Some(&csrf)) {
        return Ok(Err(pages::error(StatusCode::BAD_REQUEST, expired)));
    }
    Ok(Ok((pairs, csrf)))
}

/// The page of the step that follows a sign-in step.
fn next_page(
    next: AfterSignIn,
    client_name: &str,
    scope: &str,
    csrf: &str,
    mobile: bool,
) -> HttpResponse {
    match next {
        AfterSignIn::Redirect(location) => redirect(&location),
        AfterSignIn::Consent { ticket } => {
            pages::consent(client_name, scope, &ticket, csrf, mobile)
        }
        AfterSignIn::SecondFactor(step) => pages::second_factor(client_name, &step, csrf, mobile),
        AfterSignIn::PasswordChange { ticket } => {
            pages::password_change(client_name, &ticket, csrf, None, mobile)
        }
    }
}

fn redirect(location: &str) -> HttpResponse {
    HttpResponse::Found()
        .insert_header(("Location", location))
        .finish()
}

fn rejection(r: Rejection) -> HttpResponse {
    match r {
        Rejection::ErrorPage { message } => pages::error(StatusCode::BAD_REQUEST, &message),
        Rejection::Redirect { location } => redirect(&location),
    }
}

/// The sign-in page, with a fresh CSRF token bound to a cookie.
fn sign_in_page(
    st: &AppState,
    client_name: &str,
    pairs: &[(String, String)],
    error: Option<&str>,
    mobile: bool,
    email: &str,
) -> HttpResponse {
    let csrf = coffer_oauth::secrets::new_token();
    let mut r = pages::sign_in(client_name, &carried(pairs), &csrf, error, mobile, email);
    let _ = r.add_cookie(&csrf_cookie(st, &csrf));
    r
}

#[utoipa::path(get, path = "/oauth/authorize", tag = "oauth", params(("client_id" = String, Query), ("redirect_uri" = Option<String>, Query, description = "Starts with the registered redirect URI"), ("response_type" = String, Query, description = "`code`"), ("scope" = Option<String>, Query, description = "A subset of the registered scope; none: the registered scope"), ("state" = Option<String>, Query), ("code_challenge" = Option<String>, Query), ("code_challenge_method" = Option<String>, Query, description = "S256"), ("m" = Option<String>, Query, description = "1 for the mobile layout")), responses((status = 200, body = String, content_type = "text/html", description = "The sign-in page"), (status = 302, description = "To the redirect URI with an error (`access_denied`, `invalid_scope`, `invalid_request`, `unauthorized_client`) and the state"), (status = 400, body = String, content_type = "text/html", description = "An unknown client or redirect URI, or a parameter given twice: an error page")))]
pub async fn authorize(req: HttpRequest, st: Data<AppState>) -> Result<HttpResponse, RestError> {
    let pairs = match unique_pairs(req.query_string()) {
        Ok(p) => p,
        Err(m) => return Ok(pages::error(StatusCode::BAD_REQUEST, &m)),
    };
    let params = authorize_params(&pairs);
    let checked = blocking(&st, move |ctx| svc::check_authorize(ctx, &params)).await?;
    match checked {
        Err(r) => Ok(rejection(r)),
        Ok((v, name)) => Ok(sign_in_page(&st, &name, &pairs, None, v.mobile, "")),
    }
}

#[utoipa::path(post, path = "/oauth/authorize", tag = "oauth", request_body(content = crate::plumbing::schema::SignInForm, content_type = "application/x-www-form-urlencoded"), responses((status = 200, body = String, content_type = "text/html", description = "The consent, two-factor or password-change page"), (status = 302, description = "To the client with a code, or an error"), (status = 400, body = String, content_type = "text/html", description = "A malformed form, an unknown client or redirect URI: an error page"), (status = 401, body = String, content_type = "text/html", description = "Wrong credentials or an expired form: the sign-in page again"), (status = 429, body = String, content_type = "text/html", description = "Too many failed sign-ins: the sign-in page again, with `Retry-After`")))]
pub async fn sign_in(
    req: HttpRequest,
    st: Data<AppState>,
    mut payload: web::Payload,
) -> Result<HttpResponse, RestError> {
    let pairs = match page_form(&mut payload).await? {
        Ok(p) => p,
        Err(page) => return Ok(page),
    };
    let params = authorize_params(&pairs);
    let checked = blocking(&st, move |ctx| svc::check_authorize(ctx, &params)).await?;
    let (v, name) = match checked {
        Err(r) => return Ok(rejection(r)),
        Ok(v) => v,
    };
    let email = param(&pairs, "email").unwrap_or_default();
    if !csrf_ok(&req, param(&pairs, "csrf").as_deref()) {
        return Ok(sign_in_page(
            &st,
            &name,
            &pairs,
            Some("Your sign-in form expired. Please sign in again."),
            v.mobile,
            &email,
        ));
    }
    let password = param(&pairs, "password").unwrap_or_default();
    let (e, p) = (email.clone(), password);
    let ip = st.client_ip(&req);
    let outcome = blocking(&st, move |ctx| {
        coffer_service::identity::accounts::sign_in(ctx, &e, &p, ip.as_deref())
    })
    .await?;
    let user = match outcome {
        SignIn::Ok(user) => *user,
        SignIn::Wrong => {
            return Ok(sign_in_page(
                &st,
                &name,
                &pairs,
                Some("The email or password is incorrect."),
                v.mobile,
                &email,
            ));
        }
        SignIn::Locked(wait) => {
            let message = format!(
                "Too many failed sign-ins. Try again in {} minutes.",
                (wait + 59) / 60
            );
            let mut page = sign_in_page(&st, &name, &pairs, Some(&message), v.mobile, &email);
            *page.status_mut() = StatusCode::TOO_MANY_REQUESTS;
            if let Ok(v) = actix_web::http::header::HeaderValue::from_str(&wait.to_string()) {
                page.headers_mut()
                    .insert(actix_web::http::header::RETRY_AFTER, v);
            }
            return Ok(page);
        }
    };
    let mobile = v.mobile;
    let scope = v.scope.to_string();
    let next = blocking(&st, move |ctx| svc::after_sign_in(ctx, &v, &user)).await?;
    let csrf = param(&pairs, "csrf").unwrap_or_default();
    Ok(next_page(next, &name, &scope, &csrf, mobile))
}

#[utoipa::path(post, path = "/oauth/tfa", tag = "oauth", request_body(content = crate::plumbing::schema::SecondFactorForm, content_type = "application/x-www-form-urlencoded"), responses((status = 200, body = String, content_type = "text/html", description = "The consent page, or the page again after a new code was sent"), (status = 302, description = "To the client with a code"), (status = 400, body = String, content_type = "text/html", description = "An expired or malformed form: an error page"), (status = 401, body = String, content_type = "text/html", description = "A wrong code: the page again")))]
pub async fn second_factor(
    req: HttpRequest,
    st: Data<AppState>,
    mut payload: web::Payload,
) -> Result<HttpResponse, RestError> {
    let (pairs, csrf) = match step_form(
        &req,
        &mut payload,
        "The verification form expired. Please start again from the application.",
    )
    .await?
    {
        Ok(f) => f,
        Err(page) => return Ok(page),
    };
    let ticket = param(&pairs, "ticket").unwrap_or_default();
    let code = param(&pairs, "code").unwrap_or_default();
    let resend = param(&pairs, "resend").as_deref() == Some("1");
    let ip = st.client_ip(&req);
    let outcome = blocking(&st, move |ctx| {
        svc::second_factor(ctx, &ticket, &code, resend, ip.as_deref())
    })
    .await?;
    Ok(match outcome {
        svc::SecondFactor::Expired => pages::error(
            StatusCode::BAD_REQUEST,
            "The verification expired. Please start again from the application.",
        ),
        svc::SecondFactor::Again { page, mobile } => pages::second_factor("", &page, &csrf, mobile),
        svc::SecondFactor::Done {
            next,
            client_name,
            scope,
            mobile,
        } => next_page(next, &client_name, &scope, &csrf, mobile),
    })
}

#[utoipa::path(post, path = "/oauth/password", tag = "oauth", request_body(content = crate::plumbing::schema::PasswordStepForm, content_type = "application/x-www-form-urlencoded"), responses((status = 200, body = String, content_type = "text/html", description = "The consent page"), (status = 302, description = "To the client with a code"), (status = 400, body = String, content_type = "text/html", description = "An expired or malformed form: an error page"), (status = 422, body = String, content_type = "text/html", description = "Refused: the page again"), (status = 429, body = String, content_type = "text/html", description = "Too many wrong passwords for the account or address: the page again, with `Retry-After`")))]
pub async fn password_step(
    req: HttpRequest,
    st: Data<AppState>,
    mut payload: web::Payload,
) -> Result<HttpResponse, RestError> {
    let (pairs, csrf) = match step_form(
        &req,
        &mut payload,
        "The form expired. Please start again from the application.",
    )
    .await?
    {
        Ok(f) => f,
        Err(page) => return Ok(page),
    };
    let ticket = param(&pairs, "ticket").unwrap_or_default();
    let previous = param(&pairs, "previousPassword").unwrap_or_default();
    let password = param(&pairs, "password").unwrap_or_default();
    let ip = st.client_ip(&req);
    let outcome = blocking(&st, move |ctx| {
        svc::password_step(ctx, &ticket, &previous, &password, ip.as_deref())
    })
    .await?;
    Ok(match outcome {
        svc::PasswordStep::Expired => pages::error(
            StatusCode::BAD_REQUEST,
            "The form expired. Please start again from the application.",
        ),
        svc::PasswordStep::Again {
            ticket,
            mobile,
            error,
            retry_after,
        } => {
            let mut page = pages::password_change("", &ticket, &csrf, Some(&error), mobile);
            if let Some(wait) = retry_after {
                *page.status_mut() = StatusCode::TOO_MANY_REQUESTS;
                if let Ok(v) = actix_web::http::header::HeaderValue::from_str(&wait.to_string()) {
                    page.headers_mut()
                        .insert(actix_web::http::header::RETRY_AFTER, v);
                }
            }
            page
        }
        svc::PasswordStep::Done {
            next,
            client_name,
            scope,
            mobile,
        } => next_page(next, &client_name, &scope, &csrf, mobile),
    })
}

#[utoipa::path(post, path = "/oauth/consent", tag = "oauth", request_body(content = crate::plumbing::schema::ConsentForm, content_type = "application/x-www-form-urlencoded"), responses((status = 302, description = "To the client with a code, or with access_denied"), (status = 400, body = String, content_type = "text/html", description = "An expired or malformed form: an error page")))]
pub async fn consent(
    req: HttpRequest,
    st: Data<AppState>,
    mut payload: web::Payload,
) -> Result<HttpResponse, RestError> {
    let (pairs, _) = match step_form(
        &req,
        &mut payload,
        "The consent form expired. Please start again from the application.",
    )
    .await?
    {
        Ok(f) => f,
        Err(page) => return Ok(page),
    };
    let allow = match param(&pairs, "decision").as_deref() {
        Some("allow") => true,
        Some("deny") => false,
        _ => {
            return Ok(pages::error(
                StatusCode::BAD_REQUEST,
                "Choose Allow or Deny.",
            ))
        }
    };
    let ticket = param(&pairs, "ticket").unwrap_or_default();
    let location = blocking(&st, move |ctx| svc::consent(ctx, &ticket, allow)).await?;
    Ok(match location {
        Some(l) => redirect(&l),
        None => pages::error(
            StatusCode::BAD_REQUEST,
            "The consent request expired. Please start again from the application.",
        ),
    })
}

/// Reads the form of a token, revocation or introspection request.
async fn token_form(
    req: &HttpRequest,
    st: &AppState,
    payload: &mut web::Payload,
) -> Result<Result<(TokenInput, Vec<(String, String)>), OAuthError>, RestError> {
    let ct = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !ct
        .to_ascii_lowercase()
        .starts_with("application/x-www-form-urlencoded")
    {
        return Ok(Err(OAuthError::invalid_request(
            "The body must be application/x-www-form-urlencoded.",
        )));
    }
    let body = match read_body(payload, MAX_FORM).await {
        Ok(b) => b,
        // A body that never arrived: 408 in the REST envelope (OAuth has no code for it).
        Err(e) if e.0.code == coffer_errors::ErrorCode::RequestTimeout => return Err(e),
        Err(_) => {
            return Ok(Err(OAuthError::invalid_request(
                "The request body is too large.",
            )))
        }
    };
    let pairs = match unique_pairs(&String::from_utf8_lossy(&body)) {
        Ok(p) => p,
        Err(m) => return Ok(Err(OAuthError::invalid_request(m))),
    };
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let ip = st.client_ip(req);
    Ok(TokenInput::from_pairs(&pairs, auth).map(|mut t| {
        t.client_ip = ip;
        (t, pairs)
    }))
}

#[utoipa::path(post, path = "/oauth/token", tag = "oauth", request_body(content = crate::plumbing::schema::TokenForm, content_type = "application/x-www-form-urlencoded"), responses((status = 200, body = crate::plumbing::schema::TokenResponseBody, description = "Tokens, with `Cache-Control: no-store`"), (status = 400, description = "`{error, error_description}`"), (status = 429, description = "Too many failures (`Retry-After`): `temporarily_unavailable`"), (status = 503, description = "`temporarily_unavailable`")))]
pub async fn token(
    req: HttpRequest,
    st: Data<AppState>,
    mut payload: web::Payload,
) -> Result<HttpResponse, RestError> {
    let input = match token_form(&req, &st, &mut payload).await? {
        Ok((t, _)) => t,
        Err(e) => return Ok(oauth_error(&e)),
    };
    let outcome = match svc::token(&st.ctx, input).await.map_err(RestError::from) {
        Ok(o) => o,
        Err(RestError(e)) if e.status == 503 => Err(OAuthError::new(
            coffer_errors::OAuthErrorCode::TemporarilyUnavailable,
            "Try again later.",
        )),
        Err(_) => Err(OAuthError::server_error()),
    };
    Ok(match outcome {
        Ok(t) => HttpResponse::Ok()
            .insert_header(("Cache-Control", "no-store"))
            .insert_header(("Pragma", "no-cache"))
            .json(t),
        Err(e)
            if e.retry_after.is_none()
                && (e.error == coffer_errors::OAuthErrorCode::ServerError
                    || e.error == coffer_errors::OAuthErrorCode::TemporarilyUnavailable) =>
        {
            let status = if e.error == coffer_errors::OAuthErrorCode::ServerError {
                StatusCode::INTERNAL_SERVER_ERROR
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            HttpResponse::build(status)
                .insert_header(("Cache-Control", "no-store"))
                .json(e)
        }
        Err(e) => oauth_error(&e),
    })
}

#[utoipa::path(post, path = "/oauth/revoke", tag = "oauth", request_body(content = crate::plumbing::schema::TokenOfClientForm, content_type = "application/x-www-form-urlencoded"), responses((status = 200, description = "Revoked, or an unknown token; no content"), (status = 400, description = "`{error, error_description}`")))]
pub async fn revoke(
    req: HttpRequest,
    st: Data<AppState>,
    mut payload: web::Payload,
) -> Result<HttpResponse, RestError> {
    let (input, pairs) = match token_form(&req, &st, &mut payload).await? {
        Ok(v) => v,
        Err(e) => return Ok(oauth_error(&e)),
    };
    let token = param(&pairs, "token");
    let r = blocking(&st, move |ctx| svc::revoke(ctx, &input, token.as_deref())).await?;
    Ok(match r {
        Ok(()) => HttpResponse::Ok()
            .insert_header(("Cache-Control", "no-store"))
            .finish(),
        Err(e) => oauth_error(&e),
    })
}

#[utoipa::path(post, path = "/oauth/introspect", tag = "oauth", request_body(content = crate::plumbing::schema::TokenOfClientForm, content_type = "application/x-www-form-urlencoded"), responses((status = 200, body = crate::plumbing::schema::IntrospectionBody, description = "The token, as the calling client may see it"), (status = 400, description = "`{error, error_description}`")))]
pub async fn introspect(
    req: HttpRequest,
    st: Data<AppState>,
    mut payload: web::Payload,
) -> Result<HttpResponse, RestError> {
    let (input, pairs) = match token_form(&req, &st, &mut payload).await? {
        Ok(v) => v,
        Err(e) => return Ok(oauth_error(&e)),
    };
    let token = param(&pairs, "token");
    let r = blocking(&st, move |ctx| {
        svc::introspect(ctx, &input, token.as_deref())
    })
    .await?;
    Ok(match r {
        Ok(v) => HttpResponse::Ok()
            .insert_header(("Cache-Control", "no-store"))
            .json(v),
        Err(e) => oauth_error(&e),
    })
}

#[utoipa::path(get, path = "/.well-known/oauth-authorization-server", tag = "oauth", responses((status = 200, body = crate::plumbing::schema::ServerMetadata, description = "RFC 8414 metadata")))]
pub async fn metadata(st: Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(svc::metadata(&st.ctx))
}

#[utoipa::path(get, path = "/oauth_callback.php", tag = "oauth", params(("code" = Option<String>, Query), ("state" = Option<String>, Query), ("error" = Option<String>, Query), ("error_description" = Option<String>, Query)), responses((status = 200, body = String, content_type = "text/html", description = "A page showing the code and state, or the error")))]
pub async fn callback(req: HttpRequest) -> HttpResponse {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(req.query_string()).unwrap_or_default();
    pages::callback(
        param(&pairs, "code").as_deref(),
        param(&pairs, "state").as_deref(),
        param(&pairs, "error").as_deref(),
        param(&pairs, "error_description").as_deref(),
    )
}
