//! DLI (`/rest/dli`): the activity reads, the file and folder reads, the mail reads and the
//! exports of an investigation, for system administrators while the licence stand-in
//! `dliEnabled` is on (`docs/dli.md`).

use crate::content::transfer::{serve_as, Served};
use crate::plumbing::body::{Body, Input};
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{int_id, Caller, QueryPairs};
use crate::plumbing::respond::{links, listing, whole, Envelope};
use crate::plumbing::state::{blocking, AppState};
use actix_web::dev::Payload;
use actix_web::web::{self, Data, Path};
use actix_web::{FromRequest, HttpRequest, HttpResponse};
use coffer_domain::list::{self, Dir, FieldSpec, Kind, ListQuery, ListSpec, Op};
use coffer_errors::{ApiError, ErrorCode};
use coffer_service::dli::activities::{self as acts, Query, Scope};
use coffer_service::dli::exports::{self, ExportView};
use coffer_service::dli::{self as svc, objects};
use coffer_service::platform::auth;
use coffer_service::platform::views::Listed;
use serde::Deserialize;
use std::future::Future;
use std::pin::Pin;
use utoipa::ToSchema;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/dli/users/{id}/activities").route(web::get().to(user_activities)))
        .service(
            web::resource("/dli/files/{fileId}/users/{userId}/activities")
                .route(web::get().to(file_activities)),
        )
        .service(
            web::resource("/dli/folders/{folderId}/users/{userId}/activities")
                .route(web::get().to(folder_activities)),
        )
        .service(web::resource("/dli/files/{id}").route(web::get().to(file)))
        .service(web::resource("/dli/folders/{id}").route(web::get().to(folder)))
        .service(web::resource("/dli/files/{id}/path").route(web::get().to(file_path)))
        .service(web::resource("/dli/files/{id}/versions").route(web::get().to(versions)))
        .service(
            web::resource("/dli/files/{id}/versions/{version_id}").route(web::get().to(version)),
        )
        .service(web::resource("/dli/files/{id}/content").route(web::get().to(content)))
        .service(
            web::resource("/dli/files/{id}/versions/{version_id}/content")
                .route(web::get().to(version_content)),
        )
        .service(web::resource("/dli/files/{id}/preview").route(web::get().to(preview)))
        .service(
            web::resource("/dli/files/{id}/preview/content").route(web::get().to(preview_content)),
        )
        .service(web::resource("/dli/users/{id}/mail").route(web::get().to(user_mail)))
        .service(web::resource("/dli/mail/{id}/recipients").route(web::get().to(mail_recipients)))
        .service(web::resource("/dli/mail/{id}/attachments").route(web::get().to(mail_attachments)))
        .service(web::resource("/dli/exports").route(web::get().to(export_list)))
        .service(web::resource("/dli/exports/users/{id}").route(web::post().to(export_create)))
        .service(
            web::resource("/dli/exports/{id}")
                .route(web::get().to(export_get))
                .route(web::delete().to(export_delete)),
        )
        .service(web::resource("/dli/exports/{id}/content").route(web::get().to(export_content)));
}

/// A system administrator admitted to DLI: 403 `ERR_LICENSE_DLI` first while `dliEnabled` is
/// off, then 403 `ERR_ACCESS_USER` for anyone else (both recorded as refused reads).
pub struct DliAdmin(pub auth::SystemAdmin);

impl FromRequest for DliAdmin {
    type Error = RestError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, RestError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let caller = Caller::from_request(req, payload);
        let st = req.app_data::<Data<AppState>>().cloned();
        let what = format!(
            "{} {}",
            req.method(),
            req.match_pattern().unwrap_or_default()
        );
        Box::pin(async move {
            let Caller(c) = caller.await?;
            let st = st.ok_or_else(|| RestError::from(ApiError::new(ErrorCode::AccessUser)))?;
            blocking(&st, move |ctx| svc::admit(ctx, c, &what))
                .await
                .map(DliAdmin)
        })
    }
}

/// The activity reads.
pub const ACTIVITIES: ListSpec = ListSpec {
    filters: &[],
    order_fields: &["created", "name"],
    default_order: ("created", Dir::Desc),
    default_limit: 100,
    max_limit: 1000,
    with_fields: &[],
    extra_params: &[
        "noDayBack",
        "startDate",
        "endDate",
        "filter",
        "search",
        "type",
        "transactionId",
    ],
    bulk: false,
};

/// The version list.
pub const VERSIONS: ListSpec = ListSpec {
    filters: &[],
    order_fields: &["id", "versionNumber", "created"],
    default_order: ("created", Dir::Desc),
    default_limit: 100,
    max_limit: 1000,
    with_fields: &[],
    extra_params: &[],
    bulk: false,
};

/// A `YYYY-MM-DD` date as the Unix time of its midnight (UTC); else 422
/// `ERR_INPUT_INVALID_DATE`.
fn day(field: &str, v: &str) -> Result<i64, RestError> {
    let fmt = time::macros::format_description!("[year]-[month]-[day]");
    time::Date::parse(v, &fmt)
        .map(|d| d.midnight().assume_utc().unix_timestamp())
        .map_err(|_| ApiError::field(ErrorCode::InputInvalidDate, field).into())
}

/// A range of days (`startDate`, `endDate`) as the Unix times of their midnights: each a
/// `YYYY-MM-DD` day (422 `ERR_INPUT_INVALID_DATE`), the start not after today
/// (`ERR_INPUT_DATE_NOT_BEFORE`), the end not before the start (`ERR_INPUT_DATE_NOT_AFTER`).
fn day_range(
    start: Option<&str>,
    end: Option<&str>,
) -> Result<(Option<i64>, Option<i64>), RestError> {
    let start = start.map(|v| day("startDate", v)).transpose()?;
    let end = end.map(|v| day("endDate", v)).transpose()?;
    let today = coffer_service::now().div_euclid(86_400) * 86_400;
    if start.is_some_and(|s| s > today) {
        return Err(ApiError::field(ErrorCode::InputDateNotBefore, "startDate").into());
    }
    if let (Some(s), Some(e)) = (start, end) {
        if e < s {
            return Err(ApiError::field(ErrorCode::InputDateNotAfter, "endDate").into());
        }
    }
    Ok((start, end))
}

/// The query of an activity read.
fn activity_query(q: &ListQuery) -> Result<Query, RestError> {
    let (start, end) = day_range(q.extra("startDate"), q.extra("endDate"))?;
    let days_back = match q.extra("noDayBack") {
        Some(v) => Some(
            v.parse::<i64>()
                .ok()
                .filter(|d| (0..=36_500).contains(d))
                .ok_or_else(|| ApiError::field(ErrorCode::InputNotInteger, "noDayBack"))?,
        ),
        None => None,
    };
    let mine = match q.extra("filter") {
        None | Some("all") => false,
        Some("my") => true,
        Some(_) => return Err(ApiError::field(ErrorCode::InputNotInList, "filter").into()),
    };
    let kinds = match q.extra("type") {
        None => None,
        Some(v) => {
            let asked = list::split_list(v);
            if asked.iter().any(|t| t == "all") {
                None
            } else {
                for t in &asked {
                    if !coffer_service::audit::KINDS.contains(&t.as_str()) {
                        return Err(ApiError::field(ErrorCode::InputNotInList, "type").into());
                    }
                }
                Some(asked)
            }
        }
    };
    let text = |k: &str| q.extra(k).filter(|s| !s.is_empty()).map(str::to_string);
    Ok(Query {
        days_back,
        start,
        end: end.map(|e| e + 86_400),
        mine,
        search: text("search"),
        kinds,
        transaction_id: text("transactionId"),
        by_name: q.order.0 == "name",
        descending: q.order.1 == Dir::Desc,
        offset: q.offset,
        limit: q.limit,
    })
}

async fn activities(
    admin: auth::SystemAdmin,
    st: Data<AppState>,
    user: String,
    scope: Scope,
    q: Vec<(String, String)>,
) -> Result<HttpResponse, RestError> {
    let q = activity_query(&list::parse(&q, &ACTIVITIES)?)?;
    let l = blocking(&st, move |ctx| acts::list(ctx, &admin, &user, &scope, &q)).await?;
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(get, path = "/rest/dli/users/{id}/activities", tag = "dli", params(("id" = String, Path, description = "A user id (a deleted user's too)"), ("noDayBack" = Option<i64>, Query, description = "Only the last this many days, 0 to 36500"), ("startDate" = Option<String>, Query, description = "From this day (`YYYY-MM-DD`), not after today"), ("endDate" = Option<String>, Query, description = "Through this day (`YYYY-MM-DD`), not before `startDate`"), ("filter" = Option<String>, Query, description = "`all` (default) or `my`: only what the user did"), ("search" = Option<String>, Query, description = "Only activities whose message contains this text"), ("type" = Option<String>, Query, description = "`all` or activity types, comma-separated: `folder_changes`, `file_changes`, `user_preferences`, `mail`, `tasks`, `comments`, `kitepoint`, `admin`"), ("transactionId" = Option<String>, Query, description = "Only what this request did (its `X-Request-Id`)")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::dli::activities::ActivityView>, description = "The user's activities, newest first unless asked otherwise"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such user"), (status = 422, description = "`ERR_INPUT_INVALID_DATE`, `ERR_INPUT_DATE_NOT_BEFORE`, `ERR_INPUT_DATE_NOT_AFTER`, `ERR_INPUT_NOT_IN_LIST`, `ERR_INPUT_NOT_INTEGER`, `ERR_INPUT_INVALID_FORMAT`")), security(("bearer" = [])))]
pub async fn user_activities(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    activities(admin, st, id.into_inner(), Scope::User, q).await
}

#[utoipa::path(get, path = "/rest/dli/files/{fileId}/users/{userId}/activities", tag = "dli", params(("fileId" = String, Path, description = "A file id (in the trash too)"), ("userId" = String, Path, description = "A user id"), ("noDayBack" = Option<i64>, Query, description = "Only the last this many days, 0 to 36500"), ("startDate" = Option<String>, Query, description = "From this day (`YYYY-MM-DD`)"), ("endDate" = Option<String>, Query, description = "Through this day (`YYYY-MM-DD`)"), ("filter" = Option<String>, Query, description = "`all` or `my`"), ("search" = Option<String>, Query, description = "Message contains"), ("type" = Option<String>, Query, description = "`all` or activity types, comma-separated"), ("transactionId" = Option<String>, Query, description = "A request's id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::dli::activities::ActivityView>, description = "The user's activities on the file"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such file or user"), (status = 422, description = "`ERR_INPUT_INVALID_DATE`, `ERR_INPUT_DATE_NOT_BEFORE`, `ERR_INPUT_DATE_NOT_AFTER`, `ERR_INPUT_NOT_IN_LIST`, `ERR_INPUT_NOT_INTEGER`, `ERR_INPUT_INVALID_FORMAT`")), security(("bearer" = [])))]
pub async fn file_activities(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let (file, user) = path.into_inner();
    activities(admin, st, user, Scope::File(file), q).await
}

#[utoipa::path(get, path = "/rest/dli/folders/{folderId}/users/{userId}/activities", tag = "dli", params(("folderId" = String, Path, description = "A folder id (in the trash too)"), ("userId" = String, Path, description = "A user id"), ("noDayBack" = Option<i64>, Query, description = "Only the last this many days, 0 to 36500"), ("startDate" = Option<String>, Query, description = "From this day (`YYYY-MM-DD`)"), ("endDate" = Option<String>, Query, description = "Through this day (`YYYY-MM-DD`)"), ("filter" = Option<String>, Query, description = "`all` or `my`"), ("search" = Option<String>, Query, description = "Message contains"), ("type" = Option<String>, Query, description = "`all` or activity types, comma-separated"), ("transactionId" = Option<String>, Query, description = "A request's id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::dli::activities::ActivityView>, description = "The user's activities on the folder and what it directly holds"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such folder or user"), (status = 422, description = "`ERR_INPUT_INVALID_DATE`, `ERR_INPUT_DATE_NOT_BEFORE`, `ERR_INPUT_DATE_NOT_AFTER`, `ERR_INPUT_NOT_IN_LIST`, `ERR_INPUT_NOT_INTEGER`, `ERR_INPUT_INVALID_FORMAT`")), security(("bearer" = [])))]
pub async fn folder_activities(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let (folder, user) = path.into_inner();
    activities(admin, st, user, Scope::Folder(folder), q).await
}

#[utoipa::path(get, path = "/rest/dli/files/{id}", tag = "dli", params(("id" = String, Path, description = "A file id (in the trash too)")), responses((status = 200, body = coffer_service::content::views::FileView, description = "The file as its owner sees it"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn file(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    Ok(HttpResponse::Ok().json(blocking(&st, move |ctx| objects::file(ctx, &admin, &id)).await?))
}

#[utoipa::path(get, path = "/rest/dli/folders/{id}", tag = "dli", params(("id" = String, Path, description = "A folder id (in the trash too)")), responses((status = 200, body = coffer_service::content::views::FolderView, description = "The folder as its owner sees it"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn folder(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    Ok(HttpResponse::Ok().json(blocking(&st, move |ctx| objects::folder(ctx, &admin, &id)).await?))
}

#[utoipa::path(get, path = "/rest/dli/files/{id}/path", tag = "dli", params(("id" = String, Path, description = "A file id")), responses((status = 200, body = crate::plumbing::schema::PathBody, description = "The folders from the owner's top down to the file"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn file_path(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let p = blocking(&st, move |ctx| objects::path(ctx, &admin, &id)).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"data": p})))
}

#[utoipa::path(get, path = "/rest/dli/files/{id}/versions", tag = "dli", params(("id" = String, Path, description = "A file id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::content::views::VersionView>, description = "The file's versions, newest first unless asked otherwise, deleted ones too"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn versions(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &VERSIONS)?;
    let newest = q.order.1 == Dir::Desc;
    let (offset, limit) = (q.offset, q.limit);
    let id = id.into_inner();
    let l = blocking(&st, move |ctx| {
        objects::versions(ctx, &admin, &id, newest, offset, limit)
    })
    .await?;
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(get, path = "/rest/dli/files/{id}/versions/{version_id}", tag = "dli", params(("id" = String, Path, description = "A file id"), ("version_id" = String, Path, description = "A version id")), responses((status = 200, body = coffer_service::content::views::VersionView, description = "The version"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn version(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let (id, v) = path.into_inner();
    Ok(HttpResponse::Ok()
        .json(blocking(&st, move |ctx| objects::version(ctx, &admin, &id, &v)).await?))
}

#[utoipa::path(get, path = "/rest/dli/files/{id}/content", tag = "dli", params(("id" = String, Path, description = "A file id (in the trash too)"), ("Range" = Option<String>, Header, description = "One byte range")), responses((status = 200, description = "The current version's content", content_type = "*/*"), (status = 206, description = "The range asked for", content_type = "*/*"), (status = 304, description = "Not modified"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`, `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 416, description = "`ERR_INVALID_PARAMETER`")), security(("bearer" = [])))]
pub async fn content(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let me = admin.user_id().to_string();
    let d = blocking(&st, move |ctx| objects::content(ctx, &admin, &id, None)).await?;
    crate::content::transfer::serve_as(
        &st,
        &req,
        crate::content::transfer::Served::File(&me),
        d,
        false,
    )
    .await
}

#[utoipa::path(get, path = "/rest/dli/files/{id}/versions/{version_id}/content", tag = "dli", params(("id" = String, Path, description = "A file id"), ("version_id" = String, Path, description = "A version id"), ("Range" = Option<String>, Header, description = "One byte range")), responses((status = 200, description = "The version's content", content_type = "*/*"), (status = 206, description = "The range asked for", content_type = "*/*"), (status = 304, description = "Not modified"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`, `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 416, description = "`ERR_INVALID_PARAMETER`")), security(("bearer" = [])))]
pub async fn version_content(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    req: HttpRequest,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let (id, v) = path.into_inner();
    let me = admin.user_id().to_string();
    let d = blocking(&st, move |ctx| objects::content(ctx, &admin, &id, Some(&v))).await?;
    crate::content::transfer::serve_as(
        &st,
        &req,
        crate::content::transfer::Served::File(&me),
        d,
        false,
    )
    .await
}

#[utoipa::path(get, path = "/rest/dli/files/{id}/preview", tag = "dli", params(("id" = String, Path, description = "A file id (in the trash too)")), responses((status = 200, body = coffer_service::content::views::PreviewView, description = "The preview of the current version, with addresses under `/rest/dli`"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`, `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn preview(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    Ok(
        HttpResponse::Ok()
            .json(blocking(&st, move |ctx| objects::preview(ctx, &admin, &id)).await?),
    )
}

#[utoipa::path(get, path = "/rest/dli/files/{id}/preview/content", tag = "dli", params(("id" = String, Path, description = "A file id (in the trash too)"), ("Range" = Option<String>, Header, description = "One byte range")), responses((status = 200, description = "The preview made from the current version, shown in place: a PNG thumbnail or a PDF", content(("image/png"), ("application/pdf"))), (status = 206, description = "The range asked for", content(("image/png"), ("application/pdf"))), (status = 304, description = "Not modified"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`, `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such file, or no preview was made from it"), (status = 416, description = "`ERR_INVALID_PARAMETER`")), security(("bearer" = [])))]
pub async fn preview_content(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let me = admin.user_id().to_string();
    let d = blocking(&st, move |ctx| objects::preview_content(ctx, &admin, &id)).await?;
    serve_as(&st, &req, Served::File(&me), d, true).await
}

/// A user's mail: the mail list's filters, without a shared mailbox.
pub const MAIL: ListSpec = ListSpec {
    extra_params: &["returnCustomWebForm", "customWebFormOnly"],
    ..crate::mail::LIST
};

#[utoipa::path(get, path = "/rest/dli/users/{id}/mail", tag = "dli", params(("id" = String, Path, description = "A user id (a deleted user's too)"), ("deleted" = Option<bool>, Query, description = "`true`: only mail in the trash; `false`: only mail outside it; absent: both")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::mail::MailView>, description = "The user's mail as their mailbox shows it, the trash too (default order `date:desc`)"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such user"), (status = 422, description = "`ERR_INPUT_INVALID_DATE`, `ERR_INPUT_INVALID_FORMAT`")), security(("bearer" = [])))]
pub async fn user_mail(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &MAIL)?;
    let mut m = crate::mail::mail_query(&q)?;
    // An investigation sees the trash too, unless `deleted` chooses one side.
    m.with_trashed = !q.filters.iter().any(|f| f.field == "deleted");
    let with = q.with.iter().any(|w| w == "recipients");
    let id = id.into_inner();
    let l = blocking(&st, move |ctx| {
        svc::mail::of_user(ctx, &admin, &id, &m, with)
    })
    .await?;
    Ok(listing(Envelope::Metadata, &l))
}

/// An email's recipients.
pub const RECIPIENTS: ListSpec = ListSpec {
    filters: &[FieldSpec {
        name: "type",
        kind: Kind::Int,
        ops: &[Op::Eq, Op::In],
    }],
    order_fields: &["userId", "type"],
    default_order: ("type", Dir::Asc),
    default_limit: 1000,
    max_limit: 1000,
    with_fields: &[],
    extra_params: &[],
    bulk: false,
};

#[utoipa::path(get, path = "/rest/dli/mail/{id}/recipients", tag = "dli", params(("id" = String, Path, description = "An email id (anyone's)"), ("type" = Option<i64>, Query, description = "Only recipients of this type: 0 to, 1 cc, 2 bcc (also `type:in`)")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::mail::RecipientView>, description = "The recipients, bcc ones too"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "`ERR_INPUT_INVALID_FORMAT`")), security(("bearer" = [])))]
pub async fn mail_recipients(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &RECIPIENTS)?;
    let kinds: Vec<i64> = q
        .filters
        .iter()
        .flat_map(|f| f.values.iter().filter_map(list::Value::as_int))
        .collect();
    let id = id.into_inner();
    let mut all = blocking(&st, move |ctx| svc::mail::recipients(ctx, &admin, &id)).await?;
    all.retain(|r| kinds.is_empty() || kinds.contains(&i64::from(r.kind)));
    // A stable sort keeps the order the recipients were given in within a type or user.
    if q.order.0 == "userId" {
        all.sort_by(|a, b| a.user_id.cmp(&b.user_id));
    } else {
        all.sort_by_key(|r| r.kind);
    }
    if q.order.1 == Dir::Desc {
        all.reverse();
    }
    let total = all.len() as i64;
    let items = all
        .into_iter()
        .skip(q.offset.max(0) as usize)
        .take(q.limit.max(0) as usize)
        .collect();
    Ok(listing(
        Envelope::Metadata,
        &Listed {
            items,
            total,
            offset: q.offset,
            limit: q.limit,
        },
    ))
}

#[utoipa::path(get, path = "/rest/dli/mail/{id}/attachments", tag = "dli", params(("id" = String, Path, description = "An email id (anyone's)")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::mail::AttachmentView>, description = "The email's files in their order, withdrawn ones too"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "`ERR_INPUT_INVALID_FORMAT`")), security(("bearer" = [])))]
pub async fn mail_attachments(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &crate::mail::ATTACHMENTS)?;
    let id = id.into_inner();
    let l = blocking(&st, move |ctx| {
        svc::mail::attachments(ctx, &admin, &id, q.offset, q.limit)
    })
    .await?;
    Ok(listing(Envelope::Metadata, &l))
}

/// The list of exports.
pub const EXPORTS: ListSpec = ListSpec {
    filters: &[
        FieldSpec {
            name: "user_id",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::In],
        },
        FieldSpec {
            name: "status",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::Contains],
        },
    ],
    order_fields: &[],
    default_order: ("id", Dir::Desc),
    default_limit: 100,
    max_limit: 1000,
    with_fields: &[],
    extra_params: &[],
    bulk: false,
};

fn with_links(st: &AppState, mut v: ExportView, on: bool) -> ExportView {
    if on {
        v.links = Some(links(st.base_url(), "dli/exports", &v.id));
    }
    v
}

#[utoipa::path(get, path = "/rest/dli/exports", tag = "dli", params(("user_id" = Option<String>, Query, description = "Only the exports of this user (also `user_id:in`)"), ("status" = Option<String>, Query, description = "Only exports in this state: `inprocess`, `completed`, `nodata`, `error` (also `status:contains`)")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<ExportView>, description = "The exports, newest first"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 422, description = "`ERR_INPUT_INVALID_FORMAT`")), security(("bearer" = [])))]
pub async fn export_list(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &EXPORTS)?;
    let mut eq = exports::ExportQuery {
        offset: q.offset,
        limit: q.limit,
        ..Default::default()
    };
    for f in &q.filters {
        let texts = f
            .values
            .iter()
            .filter_map(|v| v.as_text().map(str::to_string));
        match (f.field, f.op) {
            ("user_id", _) => eq.user_ids.extend(texts),
            ("status", Op::Contains) => {
                eq.status_contains = f.value().as_text().map(str::to_string)
            }
            ("status", _) => eq.statuses.extend(texts),
            _ => {}
        }
    }
    let on = q.links();
    let l = blocking(&st, move |ctx| exports::list(ctx, &admin, &eq)).await?;
    let l = Listed {
        items: l
            .items
            .into_iter()
            .map(|v| with_links(&st, v, on))
            .collect(),
        ..l
    };
    Ok(listing(Envelope::Metadata, &l))
}

/// `POST /rest/dli/exports/users/{id}`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportBody {
    /// The first day, `YYYY-MM-DD` (UTC), not after today.
    #[schema(format = Date)]
    pub start_date: String,
    /// The last day, included, `YYYY-MM-DD`, not before `startDate`.
    #[schema(format = Date)]
    pub end_date: String,
    /// What to export, at least one of `activities`, `files`, `emails`: one export each.
    #[schema(schema_with = export_types)]
    pub types: Vec<String>,
    /// Include HATEOAS links in the answer.
    pub add_links: Option<bool>,
}

impl Input for ExportBody {}

/// `types`: at least one of the export types.
fn export_types() -> utoipa::openapi::schema::Array {
    utoipa::openapi::schema::ArrayBuilder::new()
        .items(
            utoipa::openapi::ObjectBuilder::new()
                .schema_type(utoipa::openapi::schema::Type::String)
                .enum_values(Some(exports::TYPES.iter().copied())),
        )
        .min_items(Some(1))
        .build()
}

#[utoipa::path(post, path = "/rest/dli/exports/users/{id}", tag = "dli", params(("id" = String, Path, description = "A user id (a deleted user's too)")), request_body(content = ExportBody), responses((status = 200, body = crate::plumbing::schema::WithMetadata<ExportView>, description = "The new exports, one per type, `inprocess`"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such user"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_ARRAY`, `ERR_INPUT_NOT_IN_LIST`, `ERR_INPUT_INVALID_DATE`, `ERR_INPUT_DATE_NOT_BEFORE`, `ERR_INPUT_DATE_NOT_AFTER`, `ERR_INPUT_NOT_STRING`, `ERR_INPUT_NOT_BOOLEAN`, `ERR_INPUT_INVALID_FORMAT`, `ERR_INPUT_ATTRIBUTE_FORBIDDEN`")), security(("bearer" = [])))]
pub async fn export_create(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<ExportBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    if body.types.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "types").into());
    }
    if body
        .types
        .iter()
        .any(|t| !exports::TYPES.contains(&t.as_str()))
    {
        return Err(ApiError::field(ErrorCode::InputNotInList, "types").into());
    }
    day_range(Some(body.start_date.as_str()), Some(body.end_date.as_str()))?;
    let on = body.add_links.unwrap_or(false) || q.links();
    let id = id.into_inner();
    let made = blocking(&st, move |ctx| {
        exports::create(
            ctx,
            &admin,
            &id,
            &body.start_date,
            &body.end_date,
            &body.types,
        )
    })
    .await?;
    let made = made.into_iter().map(|v| with_links(&st, v, on)).collect();
    Ok(whole(Envelope::Metadata, made))
}

#[utoipa::path(get, path = "/rest/dli/exports/{id}", tag = "dli", params(("id" = i64, Path, description = "An export's id")), responses((status = 200, body = ExportView, description = "The export"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn export_get(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let id = int_id(&id)?;
    let v = blocking(&st, move |ctx| exports::get(ctx, &admin, id)).await?;
    Ok(HttpResponse::Ok().json(with_links(&st, v, q.links())))
}

#[utoipa::path(delete, path = "/rest/dli/exports/{id}", tag = "dli", params(("id" = i64, Path, description = "An export's id")), responses((status = 204, description = "The export and its file are gone"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn export_delete(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = int_id(&id)?;
    blocking(&st, move |ctx| exports::delete(ctx, &admin, id)).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(get, path = "/rest/dli/exports/{id}/content", tag = "dli", params(("id" = i64, Path, description = "An export's id"), ("Range" = Option<String>, Header, description = "One byte range")), responses((status = 200, description = "The export's file: a CSV (`activities`) or a ZIP with `manifest.csv` (`files`, `emails`)", content(("text/csv"), ("application/zip"))), (status = 206, description = "The range asked for", content(("text/csv"), ("application/zip"))), (status = 304, description = "Not modified"), (status = 403, description = "`ERR_LICENSE_DLI`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such export, or one not `completed` (no content yet)"), (status = 416, description = "`ERR_INVALID_PARAMETER`")), security(("bearer" = [])))]
pub async fn export_content(
    DliAdmin(admin): DliAdmin,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = int_id(&id)?;
    let d = blocking(&st, move |ctx| exports::content(ctx, &admin, id)).await?;
    serve_as(&st, &req, Served::Recorded, d, false).await
}
