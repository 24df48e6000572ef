//! Web forms (docs/web-forms.md): `GET /rest/webForms`, `GET /rest/webForms/{id}` (also without
//! a bearer token, under the form's access rules), `GET /rest/sharedMailboxes/{id}/webForms`,
//! and the public page `GET|POST {base}/forms/{id}` that shows a form and takes submissions.
//!
//! The page is server-rendered; its POST (multipart, for the files) carries a CSRF value that
//! must match its cookie. A signed-in browser session (the `coffer_session` cookie) is the
//! submitter of a form that needs one. The rules are `coffer_service::web_forms`'s.

use crate::plumbing::body::Body;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{Caller, InternalCaller, MaybeCaller, QueryPairs, SESSION_COOKIE};
use crate::plumbing::pages::forms as pages;
use crate::plumbing::state::{blocking, AppState};
use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use coffer_domain::list::{self, Dir, FieldSpec, Kind, ListSpec, Op};
use coffer_errors::ErrorCode;
use coffer_service::web_forms::submit::{DraftRef, SubmittedFile};
use coffer_service::web_forms::{self as svc, PageForm, WebFormView};
use coffer_service::Error;
use futures_util::StreamExt;
use serde_json::json;
use std::collections::HashMap;

const CSRF_COOKIE: &str = "coffer_form_csrf";
/// The most bytes the files of a form's own POST may have in all, whatever `maxUploadSize`
/// allows: they are held in memory until stored, so this path (browsers without script) stays
/// small; the page's script sends files of any size through the public upload instead.
const MAX_SUBMISSION_BYTES: i64 = 10 * 1024 * 1024;
/// The most text fields a submission may carry, and the longest one (bytes).
const MAX_TEXT_FIELDS: usize = 200;
const MAX_TEXT_BYTES: usize = 64 * 1024;

/// `GET /rest/webForms`: `name` (exact, case-insensitive) and `name:contains`; orders `name`
/// (default) and `last_modified`.
pub const LIST: ListSpec = ListSpec {
    filters: &[FieldSpec {
        name: "name",
        kind: Kind::Text,
        ops: &[Op::Eq, Op::Contains],
    }],
    order_fields: &["name", "last_modified"],
    default_order: ("name", Dir::Asc),
    default_limit: 1000,
    max_limit: 10_000,
    with_fields: &["fields", "profiles"],
    extra_params: &[],
    bulk: false,
};

/// One form (`fields` and `profiles` are always there; `with` naming them is accepted).
pub const ONE: ListSpec = ListSpec {
    with_fields: &["fields", "profiles"],
    ..ListSpec::PLAIN
};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/public/mail/{id}/actions/initiateUpload")
            .route(web::post().to(public_initiate)),
    )
    .service(web::resource("/webForms").route(web::get().to(list)))
    .service(web::resource("/webForms/{id}").route(web::get().to(get)))
    .service(web::resource("/sharedMailboxes/{id}/webForms").route(web::get().to(mailbox_forms)));
}

pub fn page_routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(pages::SCRIPT).route(web::get().to(script)))
        .service(
            web::resource("/forms/{id}")
                .route(web::get().to(show))
                .route(web::post().to(submit)),
        )
        .service(web::resource("/forms/{id}/submissions").route(web::post().to(start)));
}

#[utoipa::path(get, path = "/rest/webForms", tag = "webForms", responses((status = 200, body = crate::plumbing::schema::DataOf<WebFormView>, description = "The active web forms open to the caller's profile (`profiles` empty: every profile)"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`: an unknown filter or order")), security(("bearer" = [])))]
pub async fn list(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &LIST)?;
    let (offset, limit) = (q.offset.max(0) as usize, q.limit.max(0) as usize);
    let forms = blocking(&st, move |ctx| svc::list(ctx, &c, &q)).await?;
    let page: Vec<WebFormView> = forms.into_iter().skip(offset).take(limit).collect();
    Ok(HttpResponse::Ok().json(json!({ "data": page })))
}

#[utoipa::path(get, path = "/rest/webForms/{id}", tag = "webForms", params(("id" = String, Path, description = "A web form id")), responses((status = 200, body = WebFormView, description = "The web form. Without a bearer token (a capability read) only a form without `authRequired` answers; too many unknown ids from one address answer 429"), (status = 403, description = "`ERR_ACCESS_USER`: the form is disabled, or needs a signed-in user whose profile it is open to"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such form"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`: too many unknown ids from this address; `Retry-After` says when to try again")), security(("bearer" = []), ()))]
pub async fn get(
    who: MaybeCaller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ONE)?;
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| match who {
        MaybeCaller::Caller(c) => svc::get(ctx, &id, Some(&c), None),
        MaybeCaller::Anonymous { client_ip } => svc::get(ctx, &id, None, client_ip.as_deref()),
    })
    .await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(get, path = "/rest/sharedMailboxes/{id}/webForms", tag = "sharedMailboxes", params(("id" = String, Path, description = "A shared mailbox id (the mailbox account's user id)")), responses((status = 200, body = crate::plumbing::schema::DataOf<WebFormView>, description = "The web forms whose submissions reach the mailbox, disabled ones too"), (status = 403, description = "`ERR_ACCESS_USER`: the caller does not have the mailbox active (or is no member); `ERR_NOT_INTERNAL_DOMAIN`: the caller's account is not internal"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: the id is not a user id")), security(("bearer" = [])))]
pub async fn mailbox_forms(
    InternalCaller(c): InternalCaller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ONE)?;
    let id = id.into_inner();
    let forms = blocking(&st, move |ctx| svc::mailbox_forms(ctx, &c, &id)).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": forms })))
}

// The page.

fn csrf_cookie(st: &AppState, value: &str, embedded: bool) -> Cookie<'static> {
    // A framed form posts from another site's page: its cookie must travel cross-site, which
    // browsers allow only for `SameSite=None; Secure` (so an embedded form needs https).
    let same_site = if embedded && st.secure_cookies {
        SameSite::None
    } else {
        SameSite::Strict
    };
    crate::plumbing::pages::csrf_cookie(CSRF_COOKIE, value, "/forms", st.secure_cookies, same_site)
}

fn csrf_ok(req: &HttpRequest, form_value: &str) -> bool {
    crate::plumbing::pages::csrf_matches(req, CSRF_COOKIE, Some(form_value))
}

/// A form's pages run the page's own script (which talks to this origin only); an embedded
/// form's page may be framed by any site, any other is never framed.
fn framing(mut r: HttpResponse, embedded: bool) -> HttpResponse {
    let policy = if embedded {
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors *; base-uri 'none'"
    } else {
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    };
    r.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        header::HeaderValue::from_static(policy),
    );
    r
}

/// `GET /forms/static/web-form.js`: the script of the form pages.
pub async fn script() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/javascript; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
        .body(include_str!("../../assets/web-form.js"))
}

/// The signed-in user of the browser, if its session cookie is good.
async fn session_user(
    st: &Data<AppState>,
    req: &HttpRequest,
) -> Option<coffer_service::platform::auth::Caller> {
    let token = req.cookie(SESSION_COOKIE)?.value().to_string();
    let path = req.path().to_string();
    blocking(st, move |ctx| {
        // The page's own CSRF value guards its POST; the session is only who submits.
        coffer_service::identity::sessions::authenticate(ctx, &token, None, None, "GET", &path)
    })
    .await
    .ok()
}

/// The page for a refusal of the form as a whole.
fn refused(e: Error) -> Result<HttpResponse, RestError> {
    let api = match e {
        Error::Api(a) => a,
        e => return Err(e.into()),
    };
    Ok(match api.code {
        ErrorCode::EntityNotFound => pages::notice(
            StatusCode::NOT_FOUND,
            "Form not found",
            "There is no form at this address. Check that you used the whole link.",
        ),
        ErrorCode::AuthUnauthorized => pages::notice(
            StatusCode::UNAUTHORIZED,
            "Sign-in needed",
            "This form is for signed-in users. Sign in to Coffer in this browser, then open this page again.",
        ),
        ErrorCode::AccessUser => pages::notice(
            StatusCode::FORBIDDEN,
            "Form not available",
            "This form is not available to you: it is disabled, or open only to other users.",
        ),
        ErrorCode::RequestRateLimited => {
            let wait = api.retry_after.unwrap_or(60);
            let mut r = pages::notice(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many attempts",
                &format!(
                    "Too many attempts. Try again in {} minute(s).",
                    (wait + 59) / 60
                ),
            );
            if let Ok(v) = header::HeaderValue::from_str(&wait.max(1).to_string()) {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
            r
        }
        _ => return Err(RestError(api)),
    })
}

type Loaded = (
    Result<PageForm, Error>,
    Option<coffer_service::platform::auth::Caller>,
);

/// The form under its access rules, and the browser's signed-in user.
async fn load(st: &Data<AppState>, req: &HttpRequest, id: &str) -> Result<Loaded, RestError> {
    let who = session_user(st, req).await;
    let client_ip = st.client_ip(req);
    let id = id.to_string();
    let w = who.clone();
    let form = st
        .ctx
        .blocking(move |ctx| Ok(svc::page(ctx, &id, w.as_ref(), client_ip.as_deref())))
        .await?;
    Ok((form, who))
}

/// A form that is not `standalone` is only shown in a frame: a browser opening it as a page
/// of its own (`Sec-Fetch-Dest: document`) is told so.
fn outside_frame(req: &HttpRequest, form: &PageForm) -> Option<HttpResponse> {
    let top_level = req
        .headers()
        .get("sec-fetch-dest")
        .and_then(|v| v.to_str().ok())
        == Some("document");
    (!form.standalone && top_level).then(|| {
        framing(
            pages::notice(
                StatusCode::FORBIDDEN,
                "Form not available here",
                "This form is shown only inside the page of the site that offers it.",
            ),
            form.embedded,
        )
    })
}

fn action(id: &str) -> String {
    let id: String = url::form_urlencoded::byte_serialize(id.as_bytes()).collect();
    format!("{}{id}", svc::PAGE_PREFIX)
}

#[utoipa::path(get, path = "/forms/{id}", tag = "webForms", params(("id" = String, Path, description = "A web form id")), responses((status = 200, body = String, content_type = "text/html", description = "The form, built from its fields (an embedded form's page may be framed by any site)"), (status = 401, body = String, content_type = "text/html", description = "The form is for signed-in users and this browser has no session"), (status = 403, body = String, content_type = "text/html", description = "The form is disabled, or not open to the signed-in user's profile"), (status = 404, body = String, content_type = "text/html", description = "No such form"), (status = 429, body = String, content_type = "text/html", description = "Too many unknown ids from this address")))]
pub async fn show(
    req: HttpRequest,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let id = id.into_inner();
    let (form, _) = load(&st, &req, &id).await?;
    let form = match form {
        Ok(f) => f,
        Err(e) => return refused(e),
    };
    if let Some(r) = outside_frame(&req, &form) {
        return Ok(r);
    }
    let csrf = coffer_oauth::secrets::new_token();
    let mut page = pages::form(
        &form,
        &action(&id),
        &csrf,
        &HashMap::new(),
        None,
        &[],
        StatusCode::OK,
    );
    let _ = page.add_cookie(&csrf_cookie(&st, &csrf, form.embedded));
    Ok(framing(page, form.embedded))
}

/// What a submission's body carried.
#[derive(Default)]
struct Submission {
    csrf: String,
    values: HashMap<String, String>,
    files: Vec<SubmittedFile>,
    /// The started submission whose files came through the public upload (`submission`,
    /// `submissionRef`), set by the page's script.
    draft_id: Option<String>,
    draft_ref: Option<String>,
}

/// Why a body could not be taken.
enum BodyRefusal {
    Malformed,
    TooLarge,
}

async fn read_submission(
    req: &HttpRequest,
    payload: web::Payload,
    max_bytes: i64,
) -> Result<Submission, BodyRefusal> {
    let multipart = crate::plumbing::extract::content_type(req)
        .is_some_and(|ct| ct.starts_with("multipart/form-data"));
    if !multipart {
        return Err(BodyRefusal::Malformed);
    }
    let mut mp = actix_multipart::Multipart::new(req.headers(), payload.into_inner());
    let mut out = Submission::default();
    let mut total: i64 = 0;
    while let Some(field) = mp.next().await {
        let mut field = field.map_err(|_| BodyRefusal::Malformed)?;
        let name = field.name().unwrap_or("").to_string();
        let filename = field
            .content_disposition()
            .and_then(|cd| cd.get_filename().map(str::to_string));
        let mut buf = web::BytesMut::new();
        while let Some(piece) = field.next().await {
            let piece = piece.map_err(|_| BodyRefusal::Malformed)?;
            if filename.is_some() {
                total += piece.len() as i64;
                if total > max_bytes {
                    return Err(BodyRefusal::TooLarge);
                }
            } else if buf.len() + piece.len() > MAX_TEXT_BYTES {
                return Err(BodyRefusal::Malformed);
            }
            buf.extend_from_slice(&piece);
        }
        match filename {
            Some(f) => {
                // A browser sends an empty part when no file was chosen.
                let base = f.rsplit(['/', '\\']).next().unwrap_or_default().to_string();
                if base.is_empty() && buf.is_empty() {
                    continue;
                }
                out.files.push(SubmittedFile {
                    name: base,
                    bytes: buf.freeze(),
                });
            }
            None => {
                let v = String::from_utf8(buf.to_vec()).map_err(|_| BodyRefusal::Malformed)?;
                if name == "csrf" {
                    out.csrf = v;
                } else if name == "submission" {
                    out.draft_id = Some(v);
                } else if name == "submissionRef" {
                    out.draft_ref = Some(v);
                } else {
                    if out.values.len() >= MAX_TEXT_FIELDS || out.values.contains_key(&name) {
                        return Err(BodyRefusal::Malformed);
                    }
                    out.values.insert(name, v);
                }
            }
        }
    }
    Ok(out)
}

#[utoipa::path(post, path = "/forms/{id}", tag = "webForms", params(("id" = String, Path, description = "A web form id")), request_body(content = crate::plumbing::schema::WebFormSubmission, content_type = "multipart/form-data"), responses((status = 200, body = String, content_type = "text/html", description = "Delivered into the owner's inbox: the thank-you page"), (status = 400, body = String, content_type = "text/html", description = "A malformed or expired form (CSRF): an error page"), (status = 401, body = String, content_type = "text/html", description = "The form is for signed-in users and this browser has no session"), (status = 403, body = String, content_type = "text/html", description = "The form is disabled, or not open to the signed-in user's profile"), (status = 404, body = String, content_type = "text/html", description = "No such form"), (status = 422, body = String, content_type = "text/html", description = "A mandatory field is empty (`ERR_INPUT_REQUIRED`), a value does not fit its field, or the files are too large: the form again with the message; nothing is stored"), (status = 429, body = String, content_type = "text/html", description = "Too many unknown ids from this address")))]
pub async fn submit(
    req: HttpRequest,
    st: Data<AppState>,
    id: Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, RestError> {
    let id = id.into_inner();
    let (form, who) = load(&st, &req, &id).await?;
    let form = match form {
        Ok(f) => f,
        Err(e) => return refused(e),
    };
    if let Some(r) = outside_frame(&req, &form) {
        return Ok(r);
    }
    let embedded = form.embedded;
    let config = blocking(&st, coffer_service::content::uploads::config).await?;
    let max = config.max_upload_size.min(MAX_SUBMISSION_BYTES);
    let body = match read_submission(&req, payload, max).await {
        Ok(b) => b,
        Err(BodyRefusal::Malformed) => {
            return Ok(framing(
                pages::notice(
                    StatusCode::BAD_REQUEST,
                    "Form not sent",
                    "The form could not be read. Open it again and send it once more.",
                ),
                embedded,
            ))
        }
        Err(BodyRefusal::TooLarge) => {
            let csrf = coffer_oauth::secrets::new_token();
            let mut page = pages::form(
                &form,
                &action(&id),
                &csrf,
                &HashMap::new(),
                Some(&format!(
                    "The files are too large: at most {max} bytes in all."
                )),
                &[],
                StatusCode::UNPROCESSABLE_ENTITY,
            );
            let _ = page.add_cookie(&csrf_cookie(&st, &csrf, embedded));
            return Ok(framing(page, embedded));
        }
    };
    if !csrf_ok(&req, &body.csrf) {
        return Ok(framing(
            pages::notice(
                StatusCode::BAD_REQUEST,
                "Form expired",
                "This form has expired. Open it again and send it once more.",
            ),
            embedded,
        ));
    }
    let values = body.values.clone();
    let client_ip = st.client_ip(&req);
    let draft = match (body.draft_id, body.draft_ref) {
        (Some(email_id), Some(reference)) => Some(DraftRef {
            email_id,
            reference,
        }),
        _ => None,
    };
    let started = draft.clone();
    match svc::submit::submit(&st.ctx, &id, who, client_ip, body.values, body.files, draft).await {
        Ok(_) => Ok(framing(pages::thanks(&form.name), embedded)),
        Err(Error::Api(a))
            if matches!(
                a.code,
                ErrorCode::InputRequired
                    | ErrorCode::InvalidParameter
                    | ErrorCode::LicenseMaxUploadSize
                    | ErrorCode::InputExceedsMaxValue
                    | ErrorCode::SystemNoStorageAvailable
            ) =>
        {
            let mut message = if a.code == ErrorCode::LicenseMaxUploadSize {
                format!("A file is larger than the maximum upload size ({max} bytes).")
            } else {
                a.message.to_string()
            };
            // A started submission that was not the problem stays: its files are kept for the
            // corrected form.
            let kept = started.filter(|_| a.field.as_deref() != Some("submission"));
            let carried: Vec<(&str, &str)> = kept
                .as_ref()
                .map(|d| {
                    vec![
                        ("submission", d.email_id.as_str()),
                        ("submissionRef", d.reference.as_str()),
                    ]
                })
                .unwrap_or_default();
            if kept.is_some() {
                message.push_str(
                    " The files you sent are kept: correct the form and send it again (choosing files again replaces them).",
                );
            }
            let mut page = pages::form(
                &form,
                &action(&id),
                &body.csrf,
                &values,
                Some(&message),
                &carried,
                StatusCode::UNPROCESSABLE_ENTITY,
            );
            let _ = page.add_cookie(&csrf_cookie(&st, &body.csrf, embedded));
            Ok(framing(page, embedded))
        }
        Err(e) => refused(e).map(|r| framing(r, embedded)),
    }
}

// Submissions whose files go through the public upload.

#[utoipa::path(post, path = "/forms/{id}/submissions", tag = "webForms", params(("id" = String, Path, description = "A web form id"), ("X-Coffer-CSRF" = String, Header, description = "The CSRF value of the form's page (its hidden `csrf`), which must match the page's cookie")), responses((status = 201, body = crate::plumbing::schema::StartedSubmission, description = "A submission started: its draft email and the reference that opens the public upload onto it"), (status = 401, description = "`ERR_AUTH_INVALID_CSRF`: no page's CSRF value; `ERR_AUTH_UNAUTHORIZED`: the form is for signed-in users and this browser has no session"), (status = 403, description = "`ERR_ACCESS_USER`: the form is disabled, or not open to the signed-in user's profile"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such form"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`: too many submissions started (or unknown ids) from this address; `Retry-After` says when to try again")))]
pub async fn start(
    req: HttpRequest,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let presented = req
        .headers()
        .get("x-coffer-csrf")
        .and_then(|v| v.to_str().ok());
    if !crate::plumbing::pages::csrf_matches(&req, CSRF_COOKIE, presented) {
        return Err(RestError(coffer_errors::ApiError::new(
            ErrorCode::AuthInvalidCsrf,
        )));
    }
    let who = session_user(&st, &req).await;
    let client_ip = st.client_ip(&req);
    let id = id.into_inner();
    let s = blocking(&st, move |ctx| {
        coffer_service::web_forms::drafts::start(ctx, &id, who.as_ref(), client_ip.as_deref())
    })
    .await?;
    Ok(HttpResponse::Created().json(json!({
        "emailId": s.email_id,
        "ref": s.reference,
        "expire": coffer_service::rfc3339(s.expires_at),
        "initiateUri": format!("rest/public/mail/{}/actions/initiateUpload", s.email_id),
        "chunkSize": s.chunk_size,
        "maxFileSize": s.max_file_size,
        "maxFiles": svc::MAX_FILES,
    })))
}

#[utoipa::path(post, path = "/rest/public/mail/{id}/actions/initiateUpload", tag = "uploads", params(("id" = String, Path, description = "The email id of a web-form submission started on the form's page"), ("ref" = String, Query, description = "The submission's reference (from `POST /forms/{id}/submissions`)")), request_body(content = crate::plumbing::schema::InitiateUploadBody), responses((status = 201, body = coffer_service::content::views::UploadView, description = "The upload session; send the chunks to its `uri` with the same `ref` in the query"), (status = 403, description = "`ERR_ACCESS_USER`: the form was disabled, or its owner deleted"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no submission with this id and reference (or it expired, or was sent)"), (status = 409, description = "`ERR_ENTITY_EXISTS`: a folder of the owner's has the name"), (status = 413, description = "`ERR_SYSTEM_NO_STORAGE_AVAILABLE`: `totalSize` exceeds the owner's quota"), (status = 422, description = "`ERR_INPUT_REQUIRED` (`filename`, `totalSize`), `ERR_INPUT_EXCEEDS_MAX_VALUE` (`files`: 20 per submission), `ERR_INPUT_INVALID_FORMAT`, `ERR_INPUT_MIN_VALUE`, `ERR_INPUT_INVALID_DATE`, `ERR_LICENSE_MAX_UPLOAD_SIZE`"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`: too many wrong references from this address; `Retry-After` says when to try again")), security(()))]
pub async fn public_initiate(
    req: HttpRequest,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<crate::plumbing::schema::InitiateUploadBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let reference = q
        .iter()
        .find(|(k, _)| k == "ref")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let input = crate::content::transfer::initiate_input(body)?;
    let client_ip = st.client_ip(&req);
    let id = id.into_inner();
    let upload = blocking(&st, move |ctx| {
        coffer_service::web_forms::drafts::initiate_upload(
            ctx,
            &id,
            &reference,
            client_ip.as_deref(),
            &input,
        )
    })
    .await?;
    Ok(HttpResponse::Created().json(upload))
}
