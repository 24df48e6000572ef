//! The pages an outside recipient of mail opens from the link in their message
//! (docs/mail.md, "Outside recipients"): `GET /mail/{id}?ref=…`, the code step
//! (`POST /mail/{id}/code`, `POST /mail/{id}/verify`) and the attachment download
//! (`GET /mail/{id}/attachments/{aid}/content?ref=…`). Handlers read the request and call
//! `coffer_service::mail::access`, which decides; they choose the page and set the cookies.
//!
//! Every POST carries a CSRF token that must match its cookie (as on the sign-in pages). The
//! session a correct code opens is a cookie scoped to the email's path.

use crate::content::transfer::{serve_as, Served};
use crate::oauth::{page_form, param};
use crate::plumbing::error::RestError;
use crate::plumbing::pages::mail as pages;
use crate::plumbing::state::{blocking, AppState};
use actix_web::cookie::{time::Duration as CookieDuration, Cookie, SameSite};
use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use coffer_service::mail::access::{self as svc, CodeSent, Refused, Verified};
use coffer_service::Error;

const CSRF_COOKIE: &str = "coffer_mail_csrf";
const SESSION_COOKIE: &str = "coffer_mail_session";

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/mail/{id}").route(web::get().to(open)))
        .service(web::resource("/mail/{id}/code").route(web::post().to(send_code)))
        .service(web::resource("/mail/{id}/verify").route(web::post().to(verify)))
        .service(
            web::resource("/mail/{id}/attachments/{aid}/content").route(web::get().to(download)),
        );
}

/// The `ref` of the query string (empty when absent: refused like any unknown reference).
fn query_ref(req: &HttpRequest) -> String {
    serde_urlencoded::from_str::<Vec<(String, String)>>(req.query_string())
        .ok()
        .and_then(|pairs| param(&pairs, "ref"))
        .unwrap_or_default()
}

fn session(req: &HttpRequest) -> Option<String> {
    req.cookie(SESSION_COOKIE).map(|c| c.value().to_string())
}

fn csrf_cookie(st: &AppState, value: &str) -> Cookie<'static> {
    crate::plumbing::pages::csrf_cookie(
        CSRF_COOKIE,
        value,
        "/mail",
        st.secure_cookies,
        SameSite::Strict,
    )
}

fn csrf_ok(req: &HttpRequest, form_value: &str) -> bool {
    crate::plumbing::pages::csrf_matches(req, CSRF_COOKIE, Some(form_value))
}

/// The page for a refusal. Every bad reference gets the same one.
fn refused(why: Refused) -> HttpResponse {
    match why {
        Refused::Invalid => pages::refused(
            StatusCode::NOT_FOUND,
            "Link not valid",
            "This link does not open a message. Check that you used the whole link from the email you received.",
        ),
        Refused::Expired => pages::refused(
            StatusCode::GONE,
            "Message expired",
            "This message has expired: its sender made it available for a limited time only.",
        ),
        Refused::Withdrawn => pages::refused(
            StatusCode::GONE,
            "Message withdrawn",
            "The sender has withdrawn this message.",
        ),
        Refused::Internal => pages::refused(
            StatusCode::FORBIDDEN,
            "Sign-in needed",
            "This message is for signed-in users of the organisation that sent it. Open it in the application you use with your account.",
        ),
        Refused::Unverified => pages::refused(
            StatusCode::FORBIDDEN,
            "Confirm your address first",
            "Open the link from your email again and confirm your address with a code.",
        ),
        Refused::Locked(wait) => {
            let minutes = (wait + 59) / 60;
            let mut r = pages::refused(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many attempts",
                &format!("Too many attempts. Try again in {minutes} minute(s)."),
            );
            if let Ok(v) = header::HeaderValue::from_str(&wait.max(1).to_string()) {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
            r
        }
    }
}

fn page_url(st: &AppState, id: &str, reference: &str) -> String {
    let r: String = url::form_urlencoded::byte_serialize(reference.as_bytes()).collect();
    let id: String = url::form_urlencoded::byte_serialize(id.as_bytes()).collect();
    format!("{}/mail/{id}?ref={r}", st.ctx.config.base_url)
}

fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, location.to_string()))
        .finish()
}

/// `GET /mail/{id}?ref=…`: the message, or the code step, or a refusal.
pub async fn open(
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let id = id.into_inner();
    let reference = query_ref(&req);
    let (ip, s, r2) = (st.client_ip(&req), session(&req), reference.clone());
    let out = blocking(&st, move |ctx| {
        svc::open(ctx, &id, &r2, s.as_deref(), ip.as_deref())
    })
    .await?;
    Ok(match out {
        Ok(m) if m.verified => pages::message(&m, &reference),
        Ok(m) => {
            let csrf = coffer_oauth::secrets::new_token();
            let mut page = pages::ask_code(&m, &reference, &csrf);
            let _ = page.add_cookie(&csrf_cookie(&st, &csrf));
            page
        }
        Err(why) => refused(why),
    })
}

/// The fields of a code-step POST once its CSRF token matched, or the page to answer with.
async fn step(
    req: &HttpRequest,
    payload: &mut web::Payload,
) -> Result<Result<(String, String, String), HttpResponse>, RestError> {
    let pairs = match page_form(payload).await? {
        Ok(p) => p,
        Err(page) => return Ok(Err(page)),
    };
    let csrf = param(&pairs, "csrf").unwrap_or_default();
    if !csrf_ok(req, &csrf) {
        return Ok(Err(pages::refused(
            StatusCode::BAD_REQUEST,
            "Form expired",
            "This form has expired. Open the link from your email again.",
        )));
    }
    let reference = param(&pairs, "ref").unwrap_or_default();
    let code = param(&pairs, "code").unwrap_or_default();
    Ok(Ok((reference, csrf, code)))
}

/// `POST /mail/{id}/code`: mails a code, then shows the form for it.
pub async fn send_code(
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    mut payload: web::Payload,
) -> Result<HttpResponse, RestError> {
    let (reference, csrf, _) = match step(&req, &mut payload).await? {
        Ok(x) => x,
        Err(page) => return Ok(page),
    };
    let id = id.into_inner();
    let (ip, r2, id2) = (st.client_ip(&req), reference.clone(), id.clone());
    let out = blocking(&st, move |ctx| {
        svc::send_code(ctx, &id2, &r2, ip.as_deref())
    })
    .await?;
    Ok(match out {
        Ok(CodeSent::Sent(to)) => pages::enter_code(
            &id,
            &reference,
            &csrf,
            Some(&format!(
                "A 6-digit code is being mailed to {to}; it may take a moment to arrive. It works for {} minutes.",
                svc::CODE_SECS / 60
            )),
            None,
        ),
        Ok(CodeSent::NotNeeded) => see_other(&page_url(&st, &id, &reference)),
        Err(why) => refused(why),
    })
}

/// `POST /mail/{id}/verify`: a right code opens the session and goes back to the message; a
/// wrong one shows the form again with what is left.
pub async fn verify(
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    mut payload: web::Payload,
) -> Result<HttpResponse, RestError> {
    let (reference, csrf, code) = match step(&req, &mut payload).await? {
        Ok(x) => x,
        Err(page) => return Ok(page),
    };
    let id = id.into_inner();
    let (ip, r2, id2) = (st.client_ip(&req), reference.clone(), id.clone());
    let out = blocking(&st, move |ctx| {
        svc::verify_code(ctx, &id2, &r2, &code, ip.as_deref())
    })
    .await?;
    let again = |error: &str| pages::enter_code(&id, &reference, &csrf, None, Some(error));
    Ok(match out {
        Ok(Verified::Opened { session_token }) => {
            let mut r = see_other(&page_url(&st, &id, &reference));
            let cookie = Cookie::build(SESSION_COOKIE, session_token)
                .path(format!("/mail/{id}"))
                .http_only(true)
                .secure(st.secure_cookies)
                .same_site(SameSite::Strict)
                .max_age(CookieDuration::seconds(svc::SESSION_SECS))
                .finish();
            let _ = r.add_cookie(&cookie);
            r
        }
        Ok(Verified::Wrong(0)) => {
            again("That code is not right, and it no longer works. Ask for a new code.")
        }
        Ok(Verified::Wrong(left)) => again(&format!(
            "That code is not right. {left} attempt(s) left."
        )),
        Ok(Verified::NoCode) => again(
            "There is no code to check: it expired or its attempts are used up. Ask for a new code.",
        ),
        Ok(Verified::NotNeeded) => see_other(&page_url(&st, &id, &reference)),
        Err(why) => refused(why),
    })
}

/// `GET /mail/{id}/attachments/{aid}/content?ref=…`: the file, as a file download is served.
pub async fn download(
    st: Data<AppState>,
    req: HttpRequest,
    path: Path<(String, String)>,
) -> Result<HttpResponse, RestError> {
    let (id, aid) = path.into_inner();
    let reference = query_ref(&req);
    let (ip, s, r2, id2) = (
        st.client_ip(&req),
        session(&req),
        reference.clone(),
        id.clone(),
    );
    let out = st
        .ctx
        .blocking(move |ctx| svc::download(ctx, &id2, &aid, &r2, s.as_deref(), ip.as_deref()))
        .await;
    match out {
        Ok(Ok((d, recipient))) => {
            serve_as(
                &st,
                &req,
                Served::Mail {
                    actor: None,
                    recipient: Some(&recipient),
                    email_id: &id,
                },
                d,
                false,
            )
            .await
        }
        Ok(Err(Refused::Unverified)) => Ok(see_other(&page_url(&st, &id, &reference))),
        Ok(Err(why)) => Ok(refused(why)),
        Err(Error::Api(a)) => Ok(pages::refused(
            StatusCode::from_u16(a.status).unwrap_or(StatusCode::FORBIDDEN),
            "File not available",
            &a.message,
        )),
        Err(e) => Err(e.into()),
    }
}
