//! Request-file links (`/rest/folders/{id}/actions/requestFile`,
//! `/rest/mail/actions/requestFile`, `/rest/requestFile/{ref}…`; docs/request-files.md).
//!
//! The calls under `/rest/requestFile/{ref}` are the recipient's: the reference opens them,
//! with no bearer token for a link without `requireAuth`; a bearer token or the session a code
//! opened (cookie [`coffer_service::request_files::SESSION_COOKIE`]) proves the recipient where
//! it is required; a call that changes something with that session's cookie also carries the
//! session's CSRF token ([`CSRF_HEADER`]). The version header is needed as everywhere under
//! `/rest`. The recipient's HTML page, which calls these, is `page`.

pub mod page;

use crate::content::transfer::{
    field_body, is_multipart, rest_multipart_error, serve_as, serve_shown, text_field, Served,
};
use crate::plumbing::body::{Body, Input};
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{Caller, MaybeCaller, QueryPairs};
use crate::plumbing::respond::{listing, whole, Envelope};
use crate::plumbing::state::{blocking, AppState};
use actix_web::cookie::{time::Duration as CookieDuration, Cookie, SameSite};
use actix_web::http::header;
use actix_web::web::{self, Data, Path, Payload};
use actix_web::{HttpRequest, HttpResponse};
use coffer_domain::list::{self, ListSpec};
use coffer_errors::{ApiError, ErrorCode};
use coffer_service::content::uploads;
use coffer_service::request_files::{
    self as svc, access, create, recipient, Visitor, SESSION_COOKIE,
};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `GET /rest/requestFile/{ref}`: `read`.
pub const GET: ListSpec = ListSpec {
    extra_params: &["read"],
    ..ListSpec::PLAIN
};

/// The lists of a link (sources, uploads): paged.
pub const PAGED: ListSpec = ListSpec {
    default_limit: 100,
    max_limit: 1000,
    ..ListSpec::PLAIN
};

/// The one-file reads (`with` and `mode` are taken; a file is shown whole).
pub const ONE: ListSpec = crate::content::ONE;

/// `…/sources/{object_id}/content`: `inline`.
pub const CONTENT: ListSpec = ListSpec {
    extra_params: &["inline"],
    ..ListSpec::PLAIN
};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/folders/{id}/actions/requestFile").route(web::post().to(from_folder)),
    )
    .service(web::resource("/mail/actions/requestFile").route(web::post().to(from_mail)))
    .service(
        web::resource("/requestFile/{ref}")
            .route(web::get().to(get))
            .route(web::delete().to(withdraw)),
    )
    .service(web::resource("/requestFile/{ref}/preview/{object_id}").route(web::get().to(preview)))
    .service(web::resource("/requestFile/{ref}/sources").route(web::get().to(sources)))
    .service(web::resource("/requestFile/{ref}/sources/{object_id}").route(web::get().to(source)))
    .service(
        web::resource("/requestFile/{ref}/sources/{object_id}/content")
            .route(web::get().to(source_content)),
    )
    .service(
        web::resource("/requestFile/{ref}/sources/{object_id}/view")
            .route(web::get().to(source_view)),
    )
    .service(web::resource("/requestFile/{ref}/uploads").route(web::get().to(uploads_list)))
    .service(
        web::resource("/requestFile/{ref}/uploads/{object_id}")
            .route(web::get().to(upload))
            .route(web::delete().to(delete_upload)),
    )
    .service(
        web::resource("/requestFile/{ref}/uploads/{object_id}/content")
            .route(web::get().to(upload_content)),
    )
    .service(web::resource("/requestFile/{ref}/reply").route(web::post().to(reply)))
    .service(
        web::resource("/requestFile/{ref}/actions/initiateUpload")
            .route(web::post().to(initiate_upload)),
    )
    .service(web::resource("/requestFile/{ref}/actions/file").route(web::post().to(upload_file)))
    .service(web::resource("/requestFile/{ref}/comment/{object_id}").route(web::post().to(comment)))
    .service(web::resource("/requestFile/{ref}/actions/sendCode").route(web::post().to(send_code)))
    .service(
        web::resource("/requestFile/{ref}/actions/verifyCode").route(web::post().to(verify_code)),
    );
}

/// The header a call that changes something carries the code session's CSRF token in.
pub const CSRF_HEADER: &str = "X-RF-CSRF-TOKEN";

/// The cookie the page reads the code session's CSRF token from (not HTTP-only, unlike the
/// session's own; `SameSite=Strict`, so only this origin's pages see it).
pub const CSRF_COOKIE: &str = "coffer_rf_csrf";

/// The CSRF rule of the code session: a call that changes something (an upload, taking one
/// back, a comment, the reply) and comes with the session's cookie carries the session's CSRF
/// token in [`CSRF_HEADER`], else 401 `ERR_AUTH_INVALID_CSRF` before anything is read or kept.
/// `SameSite=Strict` alone would leave the session to the browser's judgement of what is the
/// same site. A signed-in caller is not held to it: a bearer token is no ambient credential,
/// and a Coffer session passed its own CSRF rule in the extractor.
fn check_csrf(req: &HttpRequest, who: &MaybeCaller) -> Result<(), RestError> {
    if matches!(who, MaybeCaller::Caller(_)) {
        return Ok(());
    }
    let Some(session) = req.cookie(SESSION_COOKIE).filter(|c| !c.value().is_empty()) else {
        return Ok(());
    };
    let presented = req
        .headers()
        .get(CSRF_HEADER)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if access::csrf_matches(session.value(), presented) {
        Ok(())
    } else {
        Err(ApiError::new(ErrorCode::AuthInvalidCsrf).into())
    }
}

/// Who calls: the reference, a signed-in caller if any, the code session if any, the address.
fn visitor(st: &AppState, req: &HttpRequest, who: MaybeCaller, reference: String) -> Visitor {
    let (user, client_ip) = match who {
        MaybeCaller::Caller(c) => (
            Some((c.user.id.clone(), c.user.email.clone())),
            st.client_ip(req),
        ),
        MaybeCaller::Anonymous { client_ip } => (None, client_ip),
    };
    Visitor {
        reference,
        user,
        session: req.cookie(SESSION_COOKIE).map(|c| c.value().to_string()),
        client_ip,
    }
}

/// `POST /rest/folders/{id}/actions/requestFile`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FolderRequestBody {
    /// The recipients: one link each. Not a distribution list.
    #[schema(min_items = 1, max_items = 100)]
    to: Vec<String>,
    /// 1 to 998 characters.
    subject: String,
    /// The message; formatting markup only, and a link's text may not name another host than
    /// it goes to.
    body: Option<String>,
    /// The last day the links work (`YYYY-MM-DD`, UTC): today or later. Default: the setting
    /// `requestFileDefaultExpireDays` ahead.
    expire: Option<String>,
    /// Files each recipient may send: 1 to the setting `requestFileMaxCount`. Default: the
    /// setting `requestFileDefaultCount`.
    count: Option<i64>,
    /// Whether the recipient must prove the address (signed in as it, or with a mailed code).
    require_auth: Option<bool>,
    /// Files offered to the recipients (ids of the caller's files).
    #[schema(max_items = 100)]
    files: Option<Vec<String>>,
    /// What the recipients may do with `files`: 1 view (default), 2 view and download.
    action_id: Option<i64>,
    /// 1 (default): the answer shows each link's `ref` and `uploadLink`; 0: they travel by
    /// mail only.
    show_token: Option<i64>,
}

impl Input for FolderRequestBody {
    const MULTILINE: &'static [&'static str] = &["body"];
}

/// `POST /rest/mail/actions/requestFile`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MailRequestBody {
    /// The recipients: one link each. Not a distribution list.
    #[schema(min_items = 1, max_items = 100)]
    to: Vec<String>,
    /// 1 to 998 characters.
    subject: String,
    /// The message (as for the folder variant).
    body: Option<String>,
    /// The last day the links work (`YYYY-MM-DD`, UTC).
    expire: Option<String>,
    /// Files each recipient may send (as `count` of the folder variant).
    file_limit: Option<i64>,
    require_auth: Option<bool>,
    /// Accepted for the reference's clients; Coffer sends no read receipts for requests.
    return_receipts: Option<Vec<String>>,
    /// The files arrive in this shared mailbox's inbox (the caller is an active member).
    shared_mailbox_id: Option<String>,
}

impl Input for MailRequestBody {
    const MULTILINE: &'static [&'static str] = &["body"];
}

/// `POST /rest/requestFile/{ref}/reply`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplyBody {
    /// A message to the requestor (formatting markup only).
    body: Option<String>,
}

impl Input for ReplyBody {
    const MULTILINE: &'static [&'static str] = &["body"];
}

/// `POST /rest/requestFile/{ref}/actions/verifyCode`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VerifyCodeBody {
    /// The code from the mail.
    code: String,
}

impl Input for VerifyCodeBody {}

/// Where a code went.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeSentView {
    /// The recipient's address, most of it hidden.
    sent_to: String,
}

/// The session a right code opened.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeSessionView {
    /// Send it back in the cookie `coffer_rf_session` (also set by this answer).
    session_token: String,
    /// Seconds it lasts.
    expires_in: i64,
    /// The session's CSRF token (also set as the cookie `coffer_rf_csrf`): calls that change
    /// something and send the session's cookie carry it in the header `X-RF-CSRF-TOKEN`.
    csrf_token: String,
}

#[utoipa::path(post, path = "/rest/folders/{id}/actions/requestFile", tag = "requestFile", params(("id" = String, Path, description = "The folder the files are to arrive in")), request_body(content = FolderRequestBody), responses((status = 200, body = crate::plumbing::schema::WithMetadata<svc::RequestFileView>, description = "One link per recipient; each recipient is sent theirs by mail"), (status = 403, description = "`ERR_ACCESS_USER`: the caller may not add files to the folder; `ERR_ENTITY_DELETED`; `ERR_ENTITY_IS_SECURE_FOLDER`: the folder, or a file offered, is in a secure folder; `ERR_ENTITY_IS_BASE_DIR`, `ERR_ENTITY_IS_MY_DIR`; `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`: a file offered; `ERR_INPUT_EMAIL_IS_DISTRIBUTION_LIST`: a recipient; `ERR_SYSTEM_REQUEST_FILE_DISABLED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such folder or offered file, or one the caller does not see"), (status = 422, description = "`ERR_INPUT_REQUIRED`: `to`, `subject`; `ERR_INVALID_PARAMETER`: an address, the subject's length, `count`, `actionId`, `showToken`; `ERR_INPUT_INVALID_DATE`: `expire`; `ERR_INPUT_HYPERLINK`, `ERR_INPUT_HTML_TAGS_INVALID`: `body`")), security(("bearer" = [])))]
pub async fn from_folder(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<FolderRequestBody>,
) -> Result<HttpResponse, RestError> {
    let b = body?;
    list::parse(&q, &ListSpec::PLAIN)?;
    let input = create::RequestInput {
        to: b.to,
        subject: b.subject,
        body: b.body,
        expire: b.expire,
        count: b.count,
        require_auth: b.require_auth,
        files: b.files.unwrap_or_default(),
        action_id: b.action_id,
        show_token: b.show_token,
        shared_mailbox_id: None,
    };
    let id = id.into_inner();
    let views = blocking(&st, move |ctx| create::from_folder(ctx, &c, &id, &input)).await?;
    Ok(whole(Envelope::Metadata, views))
}

#[utoipa::path(post, path = "/rest/mail/actions/requestFile", tag = "requestFile", params(("returnEntity" = Option<bool>, Query, description = "Answer the links (`{data: [RequestFile]}`) rather than nothing")), request_body(content = MailRequestBody), responses((status = 201, body = crate::plumbing::schema::WithMetadata<svc::RequestFileView>, description = "One link per recipient, each sent by mail; the body only with `returnEntity`. The files arrive as one email in the inbox on the recipient's `reply` or after the last file the link takes"), (status = 403, description = "`ERR_ACCESS_USER`: not an active member of the shared mailbox; `ERR_INPUT_EMAIL_IS_DISTRIBUTION_LIST`: a recipient; `ERR_SYSTEM_REQUEST_FILE_DISABLED`"), (status = 422, description = "`ERR_INPUT_REQUIRED`: `to`, `subject`; `ERR_INVALID_PARAMETER`: an address, the subject's length, `fileLimit`; `ERR_INPUT_INVALID_DATE`: `expire`; `ERR_INPUT_HYPERLINK`, `ERR_INPUT_HTML_TAGS_INVALID`: `body`")), security(("bearer" = [])))]
pub async fn from_mail(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<MailRequestBody>,
) -> Result<HttpResponse, RestError> {
    let b = body?;
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    for (i, a) in b.return_receipts.iter().flatten().enumerate() {
        coffer_domain::email::Email::parse(a).map_err(|_| {
            ApiError::field(ErrorCode::InvalidParameter, format!("returnReceipts[{i}]"))
        })?;
    }
    let input = create::RequestInput {
        to: b.to,
        subject: b.subject,
        body: b.body,
        expire: b.expire,
        count: b.file_limit,
        require_auth: b.require_auth,
        files: Vec::new(),
        action_id: None,
        show_token: Some(1),
        shared_mailbox_id: b.shared_mailbox_id.filter(|m| !m.is_empty()),
    };
    let views = blocking(&st, move |ctx| create::from_mail(ctx, &c, &input)).await?;
    if !q.return_entity {
        return Ok(HttpResponse::Created().finish());
    }
    let n = views.len() as i64;
    let mut res = listing(
        Envelope::Metadata,
        &coffer_service::platform::views::Listed {
            items: views,
            total: n,
            offset: 0,
            limit: n.max(1),
        },
    );
    *res.status_mut() = actix_web::http::StatusCode::CREATED;
    Ok(res)
}

#[utoipa::path(get, path = "/rest/requestFile/{ref}", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference"), ("read" = Option<bool>, Query, description = "Record the view (`requestfile.link.view`; default true)")), responses((status = 200, body = svc::RequestFileView, description = "The link, also when it takes no more files (`remaining` 0)"), (status = 401, description = "`ERR_AUTH_REQUEST_FILE`: the link asks for the recipient to prove the address"), (status = 403, description = "`ERR_ACCESS_USER`: an unknown reference, or someone other than the recipient; `ERR_ENTITY_DELETED`: the folder is gone; `ERR_ENTITY_REQUEST_FILE_EXPIRED`: withdrawn or past its last day"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: a reference with a control character in it"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`: too many unknown references from the address")), security(("bearer" = []), ()))]
pub async fn get(
    who: MaybeCaller,
    st: Data<AppState>,
    req: HttpRequest,
    reference: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &GET)?;
    let read = match q.extra("read") {
        Some(v) => list::parse_bool("read", v)?,
        None => true,
    };
    let v = visitor(&st, &req, who, reference.into_inner());
    Ok(HttpResponse::Ok().json(blocking(&st, move |ctx| recipient::get(ctx, &v, read)).await?))
}

#[utoipa::path(delete, path = "/rest/requestFile/{ref}", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference")), responses((status = 200, description = "Withdrawn: the link takes nothing more and answers `ERR_ENTITY_REQUEST_FILE_EXPIRED`"), (status = 403, description = "`ERR_ACCESS_USER`: not the one who asked, or an unknown reference; `ERR_ENTITY_REQUEST_FILE_EXPIRED`: withdrawn already"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: a reference with a control character in it"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`")), security(("bearer" = [])))]
pub async fn withdraw(
    Caller(c): Caller,
    st: Data<AppState>,
    req: HttpRequest,
    reference: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let ip = st.client_ip(&req);
    let reference = reference.into_inner();
    blocking(&st, move |ctx| {
        create::withdraw(ctx, &c, &reference, ip.as_deref())
    })
    .await?;
    Ok(HttpResponse::Ok().finish())
}

#[utoipa::path(get, path = "/rest/requestFile/{ref}/preview/{object_id}", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference"), ("object_id" = String, Path, description = "An offered file")), responses((status = 200, body = coffer_service::content::views::PreviewView, description = "The preview's state; a type shown in place links to the file's content through the link"), (status = 401, description = "`ERR_AUTH_REQUEST_FILE`"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`, `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: not a file offered with the link"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`")), security(("bearer" = []), ()))]
pub async fn preview(
    who: MaybeCaller,
    st: Data<AppState>,
    req: HttpRequest,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let (reference, id) = path.into_inner();
    let v = visitor(&st, &req, who, reference);
    Ok(HttpResponse::Ok().json(blocking(&st, move |ctx| recipient::preview(ctx, &v, &id)).await?))
}

#[utoipa::path(get, path = "/rest/requestFile/{ref}/sources", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<svc::RequestFileSourceView>, description = "The files offered with the link and what the recipient may do with each"), (status = 401, description = "`ERR_AUTH_REQUEST_FILE`"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: a reference with a control character in it"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`")), security(("bearer" = []), ()))]
pub async fn sources(
    who: MaybeCaller,
    st: Data<AppState>,
    req: HttpRequest,
    reference: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &PAGED)?;
    let v = visitor(&st, &req, who, reference.into_inner());
    let l = blocking(&st, move |ctx| {
        recipient::sources(ctx, &v, q.offset, q.limit)
    })
    .await?;
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(get, path = "/rest/requestFile/{ref}/sources/{object_id}", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference"), ("object_id" = String, Path, description = "An offered file")), responses((status = 200, body = coffer_service::content::views::FileView, description = "The offered file (without where it lives among the requestor's folders)"), (status = 401, description = "`ERR_AUTH_REQUEST_FILE`"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: not a file offered with the link"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`")), security(("bearer" = []), ()))]
pub async fn source(
    who: MaybeCaller,
    st: Data<AppState>,
    req: HttpRequest,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ONE)?;
    let (reference, id) = path.into_inner();
    let v = visitor(&st, &req, who, reference);
    Ok(HttpResponse::Ok().json(blocking(&st, move |ctx| recipient::source(ctx, &v, &id)).await?))
}

#[utoipa::path(get, path = "/rest/requestFile/{ref}/sources/{object_id}/content", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference"), ("object_id" = String, Path, description = "An offered file"), ("inline" = Option<bool>, Query, description = "Show in place: on a view-only link, the only way the file is served, and only for types shown in place (images, PDF, audio, video)"), ("Range" = Option<String>, Header, description = "One byte range")), responses((status = 200, description = "The content", content_type = "*/*"), (status = 206, description = "The range asked for", content_type = "*/*"), (status = 304, description = "Not modified"), (status = 401, description = "`ERR_AUTH_REQUEST_FILE`"), (status = 403, description = "`ERR_ACCESS_USER`: a view-only link (`actionId` 1), or an unknown reference; `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`, `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 416, description = "`ERR_INVALID_PARAMETER`: the range lies outside the content"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`")), security(("bearer" = []), ()))]
pub async fn source_content(
    who: MaybeCaller,
    st: Data<AppState>,
    req: HttpRequest,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &CONTENT)?;
    let inline = match q.extra("inline") {
        Some(v) => list::parse_bool("inline", v)?,
        None => false,
    };
    let (reference, id) = path.into_inner();
    let v = visitor(&st, &req, who, reference);
    let (d, link_id) = blocking(&st, move |ctx| {
        recipient::source_download(ctx, &v, &id, inline)
    })
    .await?;
    serve_as(&st, &req, Served::RequestFile { link_id }, d, inline).await
}

#[utoipa::path(get, path = "/rest/requestFile/{ref}/sources/{object_id}/view", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference"), ("object_id" = String, Path, description = "An offered file"), ("Range" = Option<String>, Header, description = "One byte range")), responses((status = 200, description = "The file as it is viewed in place, on any link (a view-only one too), `Content-Disposition: inline`, in a sandbox, never sniffed: an image, PDF, audio or video file itself; a text file's text as `text/plain; charset=utf-8` (HTML, XML and scripts too, shown as their source); else the preview made from the file (a PNG thumbnail or a PDF)", content(("image/*"), ("application/pdf"), ("text/plain"), ("audio/*"), ("video/*"))), (status = 206, description = "The range asked for", content(("image/*"), ("application/pdf"), ("text/plain"), ("audio/*"), ("video/*"))), (status = 304, description = "Not modified"), (status = 401, description = "`ERR_AUTH_REQUEST_FILE`"), (status = 403, description = "`ERR_ACCESS_USER`: an unknown reference; `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`, `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: not a file offered with the link, or one with no view (no image, PDF or text, and no preview made of it)"), (status = 416, description = "`ERR_INVALID_PARAMETER`: the range lies outside the content"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`")), security(("bearer" = []), ()))]
pub async fn source_view(
    who: MaybeCaller,
    st: Data<AppState>,
    req: HttpRequest,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let (reference, id) = path.into_inner();
    let v = visitor(&st, &req, who, reference);
    let (mut d, rendition, link_id) =
        blocking(&st, move |ctx| recipient::source_view(ctx, &v, &id)).await?;
    let served = Served::RequestFile { link_id };
    match rendition {
        recipient::Rendition::Text => {
            // The text, never the type it was stored as: nothing in it is rendered or run.
            d.mime = recipient::TEXT_VIEW_MIME.to_string();
            serve_shown(&st, &req, served, d, true).await
        }
        recipient::Rendition::Native | recipient::Rendition::Made => {
            serve_as(&st, &req, served, d, true).await
        }
    }
}

#[utoipa::path(get, path = "/rest/requestFile/{ref}/uploads", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<svc::RequestFileUploadView>, description = "What arrived through the link, oldest first"), (status = 401, description = "`ERR_AUTH_REQUEST_FILE`"), (status = 403, description = "`ERR_ACCESS_USER`: the link does not ask for sign-in (`requireAuth`), or an unknown reference; `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: a reference with a control character in it"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`")), security(("bearer" = []), ()))]
pub async fn uploads_list(
    who: MaybeCaller,
    st: Data<AppState>,
    req: HttpRequest,
    reference: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &PAGED)?;
    let v = visitor(&st, &req, who, reference.into_inner());
    let l = blocking(&st, move |ctx| {
        recipient::uploads(ctx, &v, q.offset, q.limit)
    })
    .await?;
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(get, path = "/rest/requestFile/{ref}/uploads/{object_id}", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference"), ("object_id" = String, Path, description = "A file that arrived through the link")), responses((status = 200, body = coffer_service::content::views::FileView, description = "The file, by the name the recipient gave it"), (status = 401, description = "`ERR_AUTH_REQUEST_FILE`"), (status = 403, description = "`ERR_ACCESS_USER`: the link does not ask for sign-in, or an unknown reference; `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: not a file that arrived through the link"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`")), security(("bearer" = []), ()))]
pub async fn upload(
    who: MaybeCaller,
    st: Data<AppState>,
    req: HttpRequest,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ONE)?;
    let (reference, id) = path.into_inner();
    let v = visitor(&st, &req, who, reference);
    Ok(HttpResponse::Ok().json(blocking(&st, move |ctx| recipient::upload(ctx, &v, &id)).await?))
}

#[utoipa::path(delete, path = "/rest/requestFile/{ref}/uploads/{object_id}", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference"), ("object_id" = String, Path, description = "A file that arrived through the link")), responses((status = 204, description = "The file went to the requestor's trash; the link takes one more"), (status = 401, description = "`ERR_AUTH_REQUEST_FILE`; `ERR_AUTH_INVALID_CSRF`: the call came with the code session's cookie but without its CSRF token in `X-RF-CSRF-TOKEN`"), (status = 403, description = "`ERR_ACCESS_USER`: the link does not ask for sign-in, or an unknown reference; `ERR_ENTITY_LOCKED`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`")), security(("bearer" = []), ()))]
pub async fn delete_upload(
    who: MaybeCaller,
    st: Data<AppState>,
    req: HttpRequest,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let (reference, id) = path.into_inner();
    check_csrf(&req, &who)?;
    let v = visitor(&st, &req, who, reference);
    blocking(&st, move |ctx| recipient::delete_upload(ctx, &v, &id)).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(get, path = "/rest/requestFile/{ref}/uploads/{object_id}/content", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference"), ("object_id" = String, Path, description = "A file that arrived through the link"), ("Range" = Option<String>, Header, description = "One byte range")), responses((status = 200, description = "The content", content_type = "*/*"), (status = 206, description = "The range asked for", content_type = "*/*"), (status = 304, description = "Not modified"), (status = 401, description = "`ERR_AUTH_REQUEST_FILE`"), (status = 403, description = "`ERR_ACCESS_USER`: the link does not ask for sign-in, or an unknown reference; `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`, `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 416, description = "`ERR_INVALID_PARAMETER`"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`")), security(("bearer" = []), ()))]
pub async fn upload_content(
    who: MaybeCaller,
    st: Data<AppState>,
    req: HttpRequest,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let (reference, id) = path.into_inner();
    let v = visitor(&st, &req, who, reference);
    let (d, link_id) = blocking(&st, move |ctx| recipient::upload_download(ctx, &v, &id)).await?;
    serve_as(&st, &req, Served::RequestFile { link_id }, d, false).await
}

#[utoipa::path(post, path = "/rest/requestFile/{ref}/reply", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference")), request_body(content = ReplyBody), responses((status = 201, description = "The requestor has an email in the inbox; a link to an inbox sent its files with it and takes no more"), (status = 401, description = "`ERR_AUTH_REQUEST_FILE`; `ERR_AUTH_INVALID_CSRF`: the call came with the code session's cookie but without its CSRF token in `X-RF-CSRF-TOKEN`"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`; `ERR_ENTITY_REQUEST_FILE_NO_FILE_UPLOADED`: nothing arrived yet; `ERR_ENTITY_REQUEST_FILE_UPLOAD_LIMIT_REACHED`: the files were sent already"), (status = 422, description = "`ERR_INPUT_HYPERLINK`, `ERR_INPUT_HTML_TAGS_INVALID`, `ERR_INVALID_PARAMETER`: `body`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: a reference with a control character in it"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`")), security(("bearer" = []), ()))]
pub async fn reply(
    who: MaybeCaller,
    st: Data<AppState>,
    req: HttpRequest,
    reference: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<ReplyBody>,
) -> Result<HttpResponse, RestError> {
    let b = body?;
    list::parse(&q, &ListSpec::PLAIN)?;
    check_csrf(&req, &who)?;
    let v = visitor(&st, &req, who, reference.into_inner());
    blocking(&st, move |ctx| recipient::reply(ctx, &v, b.body.as_deref())).await?;
    Ok(HttpResponse::Created().finish())
}

#[utoipa::path(post, path = "/rest/requestFile/{ref}/actions/initiateUpload", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference")), request_body(content = crate::plumbing::schema::InitiateUploadBody), responses((status = 201, body = coffer_service::content::views::UploadView, description = "The upload session; send the chunks to its `uploadUrl`, which carries the reference"), (status = 401, description = "`ERR_AUTH_REQUEST_FILE`; `ERR_AUTH_INVALID_CSRF`: the call came with the code session's cookie but without its CSRF token in `X-RF-CSRF-TOKEN`"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`; `ERR_ENTITY_REQUEST_FILE_UPLOAD_LIMIT_REACHED`: the link takes no more files; `ERR_ENTITY_RESTRICTED_EXTENSION`: the extension is refused"), (status = 413, description = "`ERR_SYSTEM_NO_STORAGE_AVAILABLE`: `totalSize` exceeds the requestor's quota"), (status = 422, description = "`ERR_INPUT_REQUIRED`: `filename`; `ERR_INPUT_INVALID_FORMAT`, `ERR_INPUT_MIN_VALUE`, `ERR_INPUT_INVALID_DATE`, `ERR_LICENSE_MAX_UPLOAD_SIZE`, `ERR_INVALID_PARAMETER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: a reference with a control character in it"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`")), security(("bearer" = []), ()))]
pub async fn initiate_upload(
    who: MaybeCaller,
    st: Data<AppState>,
    req: HttpRequest,
    reference: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<crate::plumbing::schema::InitiateUploadBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    list::parse(&q, &ListSpec::PLAIN)?;
    let input = crate::content::transfer::initiate_input(body)?;
    if input.filename.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "filename").into());
    }
    check_csrf(&req, &who)?;
    let v = visitor(&st, &req, who, reference.into_inner());
    let u = blocking(&st, move |ctx| recipient::initiate_upload(ctx, &v, &input)).await?;
    Ok(HttpResponse::Created().json(u))
}

#[utoipa::path(post, path = "/rest/requestFile/{ref}/actions/file", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference")), request_body(content = crate::plumbing::schema::FileUploadBody, content_type = "multipart/form-data"), responses((status = 200, body = coffer_service::content::views::FileView, description = "The file as it arrived, by the name the recipient gave it (the same name again makes a new version)"), (status = 400, description = "`ERR_REQUEST_INVALID_JSON`: not multipart"), (status = 401, description = "`ERR_AUTH_REQUEST_FILE`; `ERR_AUTH_INVALID_CSRF`: the call came with the code session's cookie but without its CSRF token in `X-RF-CSRF-TOKEN`"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`; `ERR_ENTITY_REQUEST_FILE_UPLOAD_LIMIT_REACHED`; `ERR_ENTITY_RESTRICTED_EXTENSION`"), (status = 408, description = "`ERR_REQUEST_TIMEOUT`"), (status = 413, description = "`ERR_SYSTEM_NO_STORAGE_AVAILABLE`: past the requestor's quota"), (status = 422, description = "`ERR_INPUT_REQUIRED`: `body`; `ERR_INPUT_INVALID_FORMAT`, `ERR_INPUT_INVALID_DATE`, `ERR_LICENSE_MAX_UPLOAD_SIZE`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: a reference with a control character in it"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`: the content was freed while it was stored; send it again")), security(("bearer" = []), ()))]
pub async fn upload_file(
    who: MaybeCaller,
    st: Data<AppState>,
    req: HttpRequest,
    reference: Path<String>,
    QueryPairs(q): QueryPairs,
    payload: Payload,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ONE)?;
    if !is_multipart(&req) {
        return Err(ApiError::new(ErrorCode::RequestInvalidJson)
            .with_message("The upload must be sent as multipart/form-data with the file in `body`.")
            .into());
    }
    check_csrf(&req, &who)?;
    let v = visitor(&st, &req, who, reference.into_inner());
    let length = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.parse::<i64>().ok());
    let mut mp = actix_multipart::Multipart::new(req.headers(), payload.into_inner());
    let mut stored = None;
    let mut client_created = None;
    let mut client_modified = None;
    let result: Result<(), RestError> = async {
        while let Some(field) = mp.next().await {
            let mut field = field.map_err(rest_multipart_error)?;
            let name = field.name().unwrap_or("").to_string();
            match name.as_str() {
                "body" | "content" | "file" if stored.is_none() => {
                    let given = field
                        .content_disposition()
                        .and_then(|cd| cd.get_filename().map(str::to_string))
                        .unwrap_or_default();
                    // Only the last path segment a browser may send.
                    let filename = given
                        .rsplit(['/', '\\'])
                        .next()
                        .unwrap_or_default()
                        .to_string();
                    let visitor = v.clone();
                    let (link, target) = blocking(&st, move |ctx| {
                        recipient::prepare_file(ctx, &visitor, &filename)
                    })
                    .await?;
                    let hint = length.map(|l| (l - 64 * 1024).max(0));
                    let s = uploads::store_body(
                        &st.ctx,
                        &link.requestor_id,
                        &target,
                        hint,
                        field_body(field),
                    )
                    .await?;
                    stored = Some((link, target, s));
                }
                "clientCreated" => {
                    let t = text_field(&mut field).await?;
                    client_created = Some(crate::content::parse_date("clientCreated", &t)?);
                }
                "clientModified" => {
                    let t = text_field(&mut field).await?;
                    client_modified = Some(crate::content::parse_date("clientModified", &t)?);
                }
                _ => {
                    text_field(&mut field).await?;
                }
            }
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        if let Some((_, _, s)) = &stored {
            uploads::release_unused(&st.ctx, s).await;
        }
        return Err(e);
    }
    let (link, target, mut s) =
        stored.ok_or_else(|| RestError(ApiError::field(ErrorCode::InputRequired, "body")))?;
    s.client_created = client_created;
    s.client_modified = client_modified;
    match recipient::finish_file(&st.ctx, &link, target, s.clone()).await {
        Ok(f) => Ok(HttpResponse::Ok().json(f)),
        Err(e) => {
            uploads::release_unused(&st.ctx, &s).await;
            Err(e.into())
        }
    }
}

#[utoipa::path(post, path = "/rest/requestFile/{ref}/comment/{object_id}", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference"), ("object_id" = String, Path, description = "An offered file, or (on a link that asks for sign-in) one that arrived through it")), request_body(content = crate::plumbing::schema::CommentBody), responses((status = 200, body = coffer_service::content::views::CommentView, description = "The new comment: by the recipient's account, or by the requestor's with the recipient's address before the text"), (status = 401, description = "`ERR_AUTH_REQUEST_FILE`; `ERR_AUTH_INVALID_CSRF`: the call came with the code session's cookie but without its CSRF token in `X-RF-CSRF-TOKEN`"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: not a file of the link"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_MAX_VALUE`, `ERR_INPUT_INVALID_FORMAT`, `ERR_INVALID_PARAMETER` (parentId)"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`")), security(("bearer" = []), ()))]
pub async fn comment(
    who: MaybeCaller,
    st: Data<AppState>,
    req: HttpRequest,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<crate::plumbing::schema::CommentBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    list::parse(&q, &ONE)?;
    let contents = body.contents;
    let parent = body.parent_id;
    let (reference, id) = path.into_inner();
    check_csrf(&req, &who)?;
    let v = visitor(&st, &req, who, reference);
    Ok(HttpResponse::Ok().json(
        blocking(&st, move |ctx| {
            recipient::comment(ctx, &v, &id, &contents, parent)
        })
        .await?,
    ))
}

#[utoipa::path(post, path = "/rest/requestFile/{ref}/actions/sendCode", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference")), responses((status = 200, body = CodeSentView, description = "A code went to the recipient's address by mail (it works for 10 minutes, once)"), (status = 403, description = "`ERR_ACCESS_USER`: an unknown reference; `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`"), (status = 422, description = "`ERR_INVALID_PARAMETER`: the link needs no code"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: a reference with a control character in it"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`: too many codes for this link, or unknown references from the address")), security(()))]
pub async fn send_code(
    st: Data<AppState>,
    req: HttpRequest,
    reference: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let v = visitor(
        &st,
        &req,
        MaybeCaller::Anonymous {
            client_ip: st.client_ip(&req),
        },
        reference.into_inner(),
    );
    let sent_to = blocking(&st, move |ctx| access::send_code(ctx, &v)).await?;
    Ok(HttpResponse::Ok().json(CodeSentView { sent_to }))
}

#[utoipa::path(post, path = "/rest/requestFile/{ref}/actions/verifyCode", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference")), request_body(content = VerifyCodeBody), responses((status = 200, body = CodeSessionView, description = "The code was right: a session for this recipient, also set as the cookie `coffer_rf_session`"), (status = 403, description = "`ERR_ACCESS_USER`: an unknown reference; `ERR_ENTITY_DELETED`, `ERR_ENTITY_REQUEST_FILE_EXPIRED`"), (status = 422, description = "`ERR_INVALID_PARAMETER`: a wrong code (the attempts left are in the message), no live code, or a link that needs none; `ERR_INPUT_REQUIRED`: `code`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: a reference with a control character in it"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`: too many failures from the address")), security(()))]
pub async fn verify_code(
    st: Data<AppState>,
    req: HttpRequest,
    reference: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<VerifyCodeBody>,
) -> Result<HttpResponse, RestError> {
    let b = body?;
    list::parse(&q, &ListSpec::PLAIN)?;
    let v = visitor(
        &st,
        &req,
        MaybeCaller::Anonymous {
            client_ip: st.client_ip(&req),
        },
        reference.into_inner(),
    );
    let token = blocking(&st, move |ctx| access::verify_code(ctx, &v, &b.code)).await?;
    let cookie = Cookie::build(SESSION_COOKIE, token.clone())
        .path("/")
        .http_only(true)
        .secure(st.secure_cookies)
        .same_site(SameSite::Strict)
        .max_age(CookieDuration::seconds(access::SESSION_LIFETIME))
        .finish();
    let csrf_token = access::csrf_token(&token);
    // Readable by the page, which echoes it in the header; sent to this origin only.
    let csrf = Cookie::build(CSRF_COOKIE, csrf_token.clone())
        .path("/")
        .secure(st.secure_cookies)
        .same_site(SameSite::Strict)
        .max_age(CookieDuration::seconds(access::SESSION_LIFETIME))
        .finish();
    let mut res = HttpResponse::Ok().json(CodeSessionView {
        session_token: token,
        expires_in: access::SESSION_LIFETIME,
        csrf_token,
    });
    let _ = res.add_cookie(&cookie);
    let _ = res.add_cookie(&csrf);
    Ok(res)
}
