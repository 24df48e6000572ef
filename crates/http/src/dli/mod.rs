//! DLI (`/rest/dli`): the activity reads and the file and folder reads of an investigation,
//! for system administrators while the licence stand-in `dliEnabled` is on (`docs/dli.md`).

use crate::plumbing::error::RestError;
use crate::plumbing::extract::{Caller, QueryPairs};
use crate::plumbing::respond::{listing, Envelope};
use crate::plumbing::state::{blocking, AppState};
use actix_web::dev::Payload;
use actix_web::web::{self, Data, Path};
use actix_web::{FromRequest, HttpRequest, HttpResponse};
use coffer_domain::list::{self, Dir, ListQuery, ListSpec};
use coffer_errors::{ApiError, ErrorCode};
use coffer_service::dli::activities::{self as acts, Query, Scope};
use coffer_service::dli::{self as svc, objects};
use coffer_service::platform::auth;
use std::future::Future;
use std::pin::Pin;

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
        );
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

/// The query of an activity read.
fn activity_query(q: &ListQuery) -> Result<Query, RestError> {
    let start = q
        .extra("startDate")
        .map(|v| day("startDate", v))
        .transpose()?;
    let end = q.extra("endDate").map(|v| day("endDate", v)).transpose()?;
    let today = coffer_service::now().div_euclid(86_400) * 86_400;
    if start.is_some_and(|s| s > today) {
        return Err(ApiError::field(ErrorCode::InputDateNotBefore, "startDate").into());
    }
    if let (Some(s), Some(e)) = (start, end) {
        if e < s {
            return Err(ApiError::field(ErrorCode::InputDateNotAfter, "endDate").into());
        }
    }
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
