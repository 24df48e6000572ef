//! Folders, files, versions, members, roles and comments (`/rest/folders…`, `/rest/files…`,
//! `/rest/roles`). Uploads and downloads are in [`crate::content::transfer`].

pub mod transfer;

use crate::plumbing::body::Body;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{Caller, QueryPairs};
use crate::plumbing::respond::{listing, whole, Envelope};
use crate::plumbing::schema::{
    CommentBody, DestinationBody, FileUpdateBody, FilesDestinationBody, FolderBody, MembersBody,
};
use crate::plumbing::state::{blocking, AppState};
use actix_web::web::{self, Data, Path};
use actix_web::HttpResponse;
use coffer_domain::list::{self, Dir, FieldSpec, Kind, ListQuery, ListSpec, Op};
use coffer_errors::{ApiError, ErrorCode};
use coffer_service::content::ChildQuery;
use coffer_service::content::{files, folders, sharing};

const WITH: &[&str] = &[
    "creator",
    "permissions",
    "members",
    "parent",
    "pathIds",
    "currentUserRole",
    "totals",
    "path",
];

/// `GET /rest/folders/top`, `/children`, `/files`: names, kinds, the trash, order and paging.
pub const CHILDREN: ListSpec = ListSpec {
    filters: &[
        FieldSpec {
            name: "name",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::Contains],
        },
        FieldSpec {
            name: "type",
            kind: Kind::Text,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "deleted",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
    ],
    order_fields: &["name", "created", "modified", "size"],
    default_order: ("name", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: WITH,
    extra_params: &[],
    bulk: false,
};

/// `GET /rest/folders/shared`.
pub const SHARED: ListSpec = ListSpec {
    filters: &[
        FieldSpec {
            name: "sharedByMe",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "name",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::Contains],
        },
    ],
    order_fields: &["name"],
    default_order: ("name", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: WITH,
    extra_params: &[],
    bulk: false,
};

/// Version and comment lists: newest or oldest first, paged.
pub const VERSIONS: ListSpec = ListSpec {
    filters: &[],
    order_fields: &["id", "versionNumber", "created"],
    default_order: ("versionNumber", Dir::Desc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: WITH,
    extra_params: &[],
    bulk: false,
};

pub const COMMENTS: ListSpec = ListSpec {
    filters: &[],
    order_fields: &["id", "created"],
    default_order: ("id", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: &["author", "object", "parent"],
    extra_params: &[],
    bulk: false,
};

/// A single folder or file: `with`, `mode`, `returnEntity`.
pub const ONE: ListSpec = ListSpec {
    with_fields: WITH,
    ..ListSpec::PLAIN
};

/// `GET /rest/files/{id}`: two parameters of other products, accepted and ignored.
pub const FILE: ListSpec = ListSpec {
    extra_params: &["requirementId", "accessVerificationId"],
    ..ONE
};

/// `GET /rest/folders/{id}/tree`.
pub const TREE: ListSpec = ListSpec {
    extra_params: &["includeOwner"],
    ..ONE
};

/// Members: `updateIfExists`, `notify`, … read by the handler.
pub const MEMBERS: ListSpec = ListSpec {
    with_fields: &["user", "role"],
    extra_params: &["updateIfExists", "downgradeNested"],
    ..ListSpec::PLAIN
};

/// `POST /rest/folders/{id}/members`: as [`MEMBERS`], and `partialSuccess`.
pub const ADD_MEMBERS: ListSpec = ListSpec {
    extra_params: &["updateIfExists", "downgradeNested", "partialSuccess"],
    ..MEMBERS
};

/// `GET /rest/folders/{id}/members`: by role, ordered.
pub const MEMBER_LIST: ListSpec = ListSpec {
    filters: &[FieldSpec {
        name: "roleId",
        kind: Kind::Int,
        ops: &[Op::Eq, Op::In],
    }],
    order_fields: &["userId", "roleId", "rank", "email"],
    // Every member unless paged.
    default_limit: 10_000,
    max_limit: 10_000,
    ..MEMBERS
};

/// `GET /rest/roles`.
pub const ROLES: ListSpec = ListSpec {
    filters: &[FieldSpec {
        name: "type",
        kind: Kind::Text,
        ops: &[Op::Eq],
    }],
    order_fields: &["id", "name", "rank"],
    ..ListSpec::PLAIN
};

/// The order a list asked for with `orderBy` (field, descending), if it asked for one.
fn asked_order(pairs: &[(String, String)], q: &ListQuery) -> Option<(&'static str, bool)> {
    pairs
        .iter()
        .any(|(k, _)| k == "orderBy")
        .then_some((q.order.0, q.order.1 == Dir::Desc))
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/folders/top").route(web::get().to(top)))
        .service(web::resource("/folders/shared").route(web::get().to(shared)))
        .service(
            web::resource("/folders/{id}")
                .route(web::get().to(get_folder))
                .route(web::put().to(update_folder))
                .route(web::delete().to(delete_folder)),
        )
        .service(
            web::resource("/folders/{id}/folders")
                .route(web::get().to(subfolders))
                .route(web::post().to(create_folder)),
        )
        .service(web::resource("/folders/{id}/children").route(web::get().to(children)))
        .service(web::resource("/folders/{id}/files").route(web::get().to(folder_files)))
        .service(web::resource("/folders/{id}/tree").route(web::get().to(tree)))
        .service(
            web::resource("/folders/{id}/actions/recover").route(web::patch().to(recover_folder)),
        )
        .service(web::resource("/folders/{id}/actions/move").route(web::post().to(move_folder)))
        .service(web::resource("/folders/{id}/actions/copy").route(web::post().to(copy_folder)))
        .service(
            web::resource("/folders/{id}/members")
                .route(web::get().to(members))
                .route(web::post().to(add_members)),
        )
        .service(
            web::resource("/folders/{id}/members/{member}").route(web::delete().to(remove_member)),
        )
        .service(web::resource("/roles").route(web::get().to(roles)))
        .service(web::resource("/files/actions/move").route(web::post().to(move_files)))
        .service(web::resource("/files/actions/copy").route(web::post().to(copy_files)))
        .service(
            web::resource("/files/{id}")
                .route(web::get().to(get_file))
                .route(web::put().to(update_file))
                .route(web::delete().to(delete_file)),
        )
        .service(web::resource("/files/{id}/path").route(web::get().to(file_path)))
        .service(web::resource("/files/{id}/actions/recover").route(web::patch().to(recover_file)))
        .service(web::resource("/files/{id}/versions/{version}").route(web::get().to(get_version)))
        .service(
            web::resource("/files/{id}/comments")
                .route(web::get().to(comments))
                .route(web::post().to(add_comment)),
        );
}

fn parse(q: &[(String, String)], spec: &ListSpec) -> Result<ListQuery, RestError> {
    Ok(list::parse(q, spec)?)
}

/// A listing query for the store, from the list grammar.
fn child_query(q: &ListQuery, kind: Option<&str>) -> Result<ChildQuery, RestError> {
    let mut out = ChildQuery {
        kind: kind.map(str::to_string),
        order: (q.order.0.to_string(), q.order.1 == Dir::Desc),
        offset: q.offset,
        limit: q.limit,
        with: q.with.clone(),
        ..Default::default()
    };
    for f in &q.filters {
        match (f.field, f.op) {
            ("name", Op::Eq) => out.name_eq = f.value().as_text().map(str::to_string),
            ("name", Op::Contains) => out.name_contains = f.value().as_text().map(str::to_string),
            ("type", _) => match f.value().as_text() {
                Some(k @ ("d" | "f")) if kind.is_none() => out.kind = Some(k.to_string()),
                Some("d" | "f") => {}
                _ => return Err(ApiError::field(ErrorCode::InputNotInList, "type").into()),
            },
            ("deleted", _) => out.deleted = matches!(f.value(), list::Value::Bool(true)),
            _ => {}
        }
    }
    Ok(out)
}

/// A date as clients send it: RFC 3339, or a plain `YYYY-MM-DD` (midnight UTC).
pub fn parse_date(field: &str, v: &str) -> Result<i64, RestError> {
    use time::format_description::well_known::Rfc3339;
    if let Ok(t) = time::OffsetDateTime::parse(v, &Rfc3339) {
        return Ok(t.unix_timestamp());
    }
    let fmt = time::macros::format_description!("[year]-[month]-[day]");
    time::Date::parse(v, &fmt)
        .map(|d| d.midnight().assume_utc().unix_timestamp())
        .map_err(|_| ApiError::field(ErrorCode::InputInvalidDate, field).into())
}

/// A date that may be cleared: absent (or `null`) keeps it, empty clears it.
fn opt_date(name: &str, v: Option<String>) -> Result<Option<Option<i64>>, RestError> {
    match v {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(Some(None)),
        Some(v) => Ok(Some(Some(parse_date(name, &v)?))),
    }
}

/// The content calls answer an item of an id or address list that is not one line of text
/// (at most `max` bytes) with `ERR_INPUT_INVALID_FORMAT` naming the list: a body's item that
/// is no string, and, through [`text_list`], one that is too long or spans lines.
fn items_invalid<T>(body: Result<T, RestError>, lists: &[&str]) -> Result<T, RestError> {
    body.map_err(|RestError(e)| match &e.field {
        Some(f) if e.code == ErrorCode::InputNotString && lists.contains(&f.as_str()) => {
            RestError(ApiError::field(ErrorCode::InputInvalidFormat, f.clone()))
        }
        _ => RestError(e),
    })
}

/// A list of ids or addresses, each one line of text of at most `max` bytes.
fn text_list(name: &str, items: Option<Vec<String>>, max: usize) -> Result<Vec<String>, RestError> {
    let items = items.unwrap_or_default();
    if items
        .iter()
        .any(|s| s.len() > max || !coffer_domain::input::is_clean(s, false))
    {
        return Err(ApiError::field(ErrorCode::InputInvalidFormat, name).into());
    }
    Ok(items)
}

fn folder_input(body: FolderBody) -> Result<folders::FolderInput, RestError> {
    Ok(folders::FolderInput {
        expire: opt_date("expire", body.expire)?,
        name: body.name,
        description: body.description,
        syncable: body.syncable,
        secure: body.secure,
        file_lifetime: body.file_lifetime,
        rename: body.rename.unwrap_or(false),
    })
}

#[utoipa::path(get, path = "/rest/folders/top", tag = "folders", responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::content::views::FolderView>, description = "The caller's top-level folders and the top-most folders shared with them")), security(("bearer" = [])))]
pub async fn top(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = parse(&q, &CHILDREN)?;
    let cq = child_query(&q, Some("d"))?;
    let user = c.user.id.clone();
    Ok(listing(
        Envelope::Metadata,
        &blocking(&st, move |ctx| folders::top(ctx, &user, &cq)).await?,
    ))
}

#[utoipa::path(get, path = "/rest/folders/shared", tag = "folders", responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::content::views::FolderView>, description = "Folders shared with the caller (`sharedByMe=true`: by the caller), by name; `name` and `name:contains` compare case-insensitively")), security(("bearer" = [])))]
pub async fn shared(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = parse(&q, &SHARED)?;
    let by_me = q
        .filters
        .iter()
        .any(|f| f.field == "sharedByMe" && matches!(f.value(), list::Value::Bool(true)));
    let name = |op: Op| {
        q.filters
            .iter()
            .find(|f| f.field == "name" && f.op == op)
            .and_then(|f| f.value().as_text().map(str::to_string))
    };
    let sq = sharing::SharedQuery {
        by_me,
        name_eq: name(Op::Eq),
        name_contains: name(Op::Contains),
        offset: q.offset,
        limit: q.limit,
        with: q.with.clone(),
    };
    let user = c.user.id.clone();
    Ok(listing(
        Envelope::Metadata,
        &blocking(&st, move |ctx| sharing::shared_folders(ctx, &user, &sq)).await?,
    ))
}

#[utoipa::path(get, path = "/rest/folders/{id}", tag = "folders", params(("id" = String, Path, description = "A folder id")), responses((status = 200, body = coffer_service::content::views::FolderView, description = "The folder"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such folder within the caller's reach")), security(("bearer" = [])))]
pub async fn get_folder(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    parse(&q, &ONE)?;
    let user = c.user.id.clone();
    let id = id.into_inner();
    Ok(HttpResponse::Ok().json(blocking(&st, move |ctx| folders::get(ctx, &user, &id)).await?))
}

#[utoipa::path(post, path = "/rest/folders/{id}/folders", tag = "folders", params(("id" = String, Path, description = "The parent folder")), request_body(content = FolderBody), responses((status = 201, body = coffer_service::content::views::FolderView, description = "The new folder, with `Location`"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_IS_MY_DIR`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 409, description = "`ERR_ENTITY_EXISTS`: the name is taken (without `rename`)"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_INVALID_FORMAT`, `ERR_INPUT_INVALID_DATE`")), security(("bearer" = [])))]
pub async fn create_folder(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<FolderBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    parse(&q, &ONE)?;
    let input = folder_input(body)?;
    let user = c.user.id.clone();
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| folders::create(ctx, &user, &id, &input)).await?;
    let location = format!("{}/rest/folders/{}", st.base_url(), v.id);
    Ok(crate::plumbing::respond::created(
        actix_web::http::StatusCode::CREATED,
        location,
        &v,
    ))
}

#[utoipa::path(get, path = "/rest/folders/{id}/folders", tag = "folders", params(("id" = String, Path, description = "A folder id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::content::views::FolderView>, description = "The folders in the folder"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn subfolders(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list_children(c, st, id.into_inner(), q, Some("d")).await
}

#[utoipa::path(get, path = "/rest/folders/{id}/children", tag = "folders", params(("id" = String, Path, description = "A folder id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<serde_json::Value>, description = "Folders, then files, in the order asked"), (status = 403, description = "`ERR_ENTITY_DELETED`: the folder is in the trash (ask with `deleted=true`)"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn children(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list_children(c, st, id.into_inner(), q, None).await
}

#[utoipa::path(get, path = "/rest/folders/{id}/files", tag = "folders", params(("id" = String, Path, description = "A folder id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::content::views::FileView>, description = "The files in the folder"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn folder_files(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list_children(c, st, id.into_inner(), q, Some("f")).await
}

async fn list_children(
    c: coffer_service::platform::auth::Caller,
    st: Data<AppState>,
    id: String,
    q: Vec<(String, String)>,
    kind: Option<&'static str>,
) -> Result<HttpResponse, RestError> {
    let q = parse(&q, &CHILDREN)?;
    let cq = child_query(&q, kind)?;
    let user = c.user.id.clone();
    let page = blocking(&st, move |ctx| folders::children(ctx, &user, &id, &cq)).await?;
    let body = match page.body.get() {
        Some(body) => body.clone(),
        None => {
            let body = actix_web::web::Bytes::from(
                crate::plumbing::respond::listing_body(Envelope::Metadata, &page.listed)
                    .map_err(coffer_service::Error::internal)?,
            );
            page.body.get_or_init(|| body).clone()
        }
    };
    Ok(HttpResponse::Ok()
        .content_type(actix_web::http::header::ContentType::json())
        .body(body))
}

#[utoipa::path(put, path = "/rest/folders/{id}", tag = "folders", params(("id" = String, Path, description = "A folder id")), request_body(content = FolderBody), responses((status = 200, body = coffer_service::content::views::FolderView, description = "The folder as changed"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_IS_SYNC_DIR`, `ERR_ENTITY_IS_MY_DIR`, `ERR_ENTITY_IS_BASE_DIR`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 409, description = "`ERR_ENTITY_EXISTS`"), (status = 422, description = "`ERR_INPUT_INVALID_FORMAT`, `ERR_INPUT_INVALID_DATE`")), security(("bearer" = [])))]
pub async fn update_folder(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<FolderBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    parse(&q, &ONE)?;
    let input = folder_input(body)?;
    let user = c.user.id.clone();
    let id = id.into_inner();
    Ok(HttpResponse::Ok()
        .json(blocking(&st, move |ctx| folders::update(ctx, &user, &id, &input)).await?))
}

#[utoipa::path(delete, path = "/rest/folders/{id}", tag = "folders", params(("id" = String, Path, description = "A folder id")), responses((status = 204, description = "The folder and what it holds are in the trash"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_IS_SYNC_DIR`, `ERR_ENTITY_IS_MY_DIR`, `ERR_ENTITY_IS_BASE_DIR`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn delete_folder(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let user = c.user.id.clone();
    let id = id.into_inner();
    blocking(&st, move |ctx| folders::delete(ctx, &user, &id)).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(patch, path = "/rest/folders/{id}/actions/recover", tag = "folders", params(("id" = String, Path, description = "A folder id")), responses((status = 200, body = coffer_service::content::views::FolderView, description = "The folder, back from the trash with what its deletion took"), (status = 403, description = "`ERR_ENTITY_DELETED`: deleted with a folder above, or its parent is in the trash"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 409, description = "`ERR_ENTITY_EXISTS`: its name is taken now")), security(("bearer" = [])))]
pub async fn recover_folder(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    parse(&q, &ONE)?;
    let user = c.user.id.clone();
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| {
        folders::recover(ctx, &user, &id)?;
        folders::get(ctx, &user, &id)
    })
    .await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(post, path = "/rest/folders/{id}/actions/move", tag = "folders", params(("id" = String, Path, description = "A folder id")), request_body(content = DestinationBody), responses((status = 201, body = coffer_service::content::views::FolderView, description = "The folder in its new place"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, system folders"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 409, description = "`ERR_ENTITY_EXISTS`"), (status = 413, description = "`ERR_SYSTEM_NO_STORAGE_AVAILABLE`: the destination owner's quota"), (status = 422, description = "`ERR_CANNOT_MOVE_FOLDER_TO_SELF`, `ERR_CANNOT_MOVE_TO_CHILD`, `ERR_INPUT_REQUIRED`")), security(("bearer" = [])))]
pub async fn move_folder(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<DestinationBody>,
) -> Result<HttpResponse, RestError> {
    let dest = body?.destination_folder_id;
    parse(&q, &ONE)?;
    let user = c.user.id.clone();
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| folders::move_to(ctx, &user, &id, &dest)).await?;
    Ok(HttpResponse::Created().json(v))
}

#[utoipa::path(post, path = "/rest/folders/{id}/actions/copy", tag = "folders", params(("id" = String, Path, description = "A folder id")), request_body(content = DestinationBody), responses((status = 201, body = coffer_service::content::views::FolderView, description = "The copy (named `name (n)` when the name is taken)"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, system folders"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 413, description = "`ERR_SYSTEM_NO_STORAGE_AVAILABLE`"), (status = 422, description = "`ERR_CANNOT_MOVE_FOLDER_TO_SELF`, `ERR_CANNOT_MOVE_TO_CHILD`, `ERR_INPUT_REQUIRED`")), security(("bearer" = [])))]
pub async fn copy_folder(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<DestinationBody>,
) -> Result<HttpResponse, RestError> {
    let dest = body?.destination_folder_id;
    parse(&q, &ONE)?;
    let user = c.user.id.clone();
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| folders::copy_to(ctx, &user, &id, &dest)).await?;
    Ok(HttpResponse::Created().json(v))
}

#[utoipa::path(get, path = "/rest/folders/{id}/tree", tag = "folders", params(("id" = String, Path, description = "A folder id"), ("includeOwner" = Option<bool>, Query, description = "Start an owner's path at their root folder")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::content::views::PathItem>, description = "The folder's ancestors, from the top-most folder the caller reaches down to the folder itself"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "`ERR_INPUT_NOT_BOOLEAN`")), security(("bearer" = [])))]
pub async fn tree(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = parse(&q, &TREE)?;
    let include_root = match q.extra("includeOwner") {
        Some(v) => list::parse_bool("includeOwner", v)?,
        None => false,
    };
    let user = c.user.id.clone();
    let id = id.into_inner();
    let items = blocking(&st, move |ctx| folders::tree(ctx, &user, &id, include_root)).await?;
    Ok(whole(Envelope::Metadata, items))
}

#[utoipa::path(get, path = "/rest/folders/{id}/members", tag = "members", params(("id" = String, Path, description = "A folder id"), ("updateIfExists" = Option<String>, Query, description = "Accepted and ignored"), ("downgradeNested" = Option<String>, Query, description = "Accepted and ignored")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::content::views::MemberView>, description = "Direct and inherited members: without `orderBy` direct ones first, then inherited ones, nearest first; `roleId`/`roleId:in` narrow by role"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn members(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let lq = parse(&q, &MEMBER_LIST)?;
    let mq = sharing::MemberQuery {
        role_ids: lq
            .filters
            .iter()
            .find(|f| f.field == "roleId")
            .map(|f| f.values.iter().filter_map(list::Value::as_int).collect()),
        order: asked_order(&q, &lq).map(|(f, d)| (f.to_string(), d)),
    };
    let user = c.user.id.clone();
    let id = id.into_inner();
    let m = blocking(&st, move |ctx| sharing::members(ctx, &user, &id, &mq)).await?;
    let total = m.len() as i64;
    Ok(listing(
        Envelope::Metadata,
        &coffer_service::platform::views::Listed {
            items: m
                .into_iter()
                .skip(lq.offset.max(0) as usize)
                .take(lq.limit.max(0) as usize)
                .collect(),
            total,
            offset: lq.offset,
            limit: lq.limit,
        },
    ))
}

#[utoipa::path(post, path = "/rest/folders/{id}/members", tag = "members", params(("id" = String, Path, description = "A folder id"), ("updateIfExists" = Option<bool>, Query, description = "Change the role of who is a member already instead of failing them"), ("downgradeNested" = Option<String>, Query, description = "Accepted and ignored"), ("partialSuccess" = Option<bool>, Query, description = "`false`: the first who fails fails the call and nobody is added; `true` or absent: who can be added is added (207 with the rest)")), request_body(content = MembersBody), responses((status = 201, body = coffer_service::content::sharing::AddMembers, description = "Everyone was added"), (status = 207, body = coffer_service::content::sharing::AddMembers, description = "Some failed (`errors`)"), (status = 403, description = "`ERR_ACCESS_USER`, system folders, `ERR_ENTITY_DELETED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_IN_LIST` (roleId)")), security(("bearer" = [])))]
pub async fn add_members(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<MembersBody>,
) -> Result<HttpResponse, RestError> {
    let body = items_invalid(body, &["userIds", "emails"])?;
    let q = parse(&q, &ADD_MEMBERS)?;
    let update = match q.extra("updateIfExists") {
        Some(v) => list::parse_bool("updateIfExists", v)?,
        None => false,
    };
    // Without the parameter, who can be added is added and the rest reported.
    let all_or_nothing = match q.extra("partialSuccess") {
        Some(v) => !list::parse_bool("partialSuccess", v)?,
        None => false,
    };
    let role = body.role_id;
    let user_ids = text_list("userIds", body.user_ids, 320)?;
    let emails = text_list("emails", body.emails, 320)?;
    if user_ids.is_empty() && emails.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "userIds").into());
    }
    if user_ids.len() + emails.len() > 1000 {
        return Err(ApiError::field(ErrorCode::InputMaxValue, "userIds").into());
    }
    let notify = body.notify_file_added.unwrap_or(false);
    let user = c.user.id.clone();
    let id = id.into_inner();
    let input = sharing::NewMembers {
        user_ids,
        emails,
        role_id: role,
        update_if_exists: update,
        notify_file_added: notify,
        all_or_nothing,
    };
    let r = blocking(&st, move |ctx| {
        sharing::add_members(ctx, &user, &id, &input)
    })
    .await?;
    let status = if r.errors.is_empty() { 201 } else { 207 };
    Ok(HttpResponse::build(
        actix_web::http::StatusCode::from_u16(status)
            .unwrap_or(actix_web::http::StatusCode::CREATED),
    )
    .json(r))
}

#[utoipa::path(delete, path = "/rest/folders/{id}/members/{member}", tag = "members", params(("id" = String, Path, description = "A folder id"), ("member" = String, Path, description = "The member's user id"), ("updateIfExists" = Option<String>, Query, description = "Accepted and ignored"), ("downgradeNested" = Option<String>, Query, description = "Accepted and ignored")), responses((status = 204, description = "Removed"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_INPUT_IS_OWNER`, `ERR_ENTITY_INHERITED_MEMBER_NOT_MODIFIABLE`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn remove_member(
    Caller(c): Caller,
    st: Data<AppState>,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    parse(&q, &MEMBERS)?;
    let (id, member) = path.into_inner();
    let user = c.user.id.clone();
    blocking(&st, move |ctx| {
        sharing::remove_member(ctx, &user, &id, &member)
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(get, path = "/rest/roles", tag = "members", responses((status = 200, body = crate::plumbing::schema::DataOf<coffer_service::content::views::RoleView>, description = "The folder (`d`) and file (`f`) roles; without `orderBy` folder roles, then file roles, each by rank")), security(("bearer" = [])))]
pub async fn roles(
    Caller(_c): Caller,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let lq = parse(&q, &ROLES)?;
    let order = asked_order(&q, &lq);
    let q = lq;
    let kind = q
        .filters
        .iter()
        .find(|f| f.field == "type")
        .and_then(|f| f.value().as_text().map(str::to_string));
    if let Some(k) = &kind {
        if k != "d" && k != "f" {
            return Err(ApiError::field(ErrorCode::InputNotInList, "type").into());
        }
    }
    Ok(
        HttpResponse::Ok()
            .json(serde_json::json!({"data": sharing::roles(kind.as_deref(), order)})),
    )
}

#[utoipa::path(get, path = "/rest/files/{id}", tag = "files", params(("id" = String, Path, description = "A file id"), ("requirementId" = Option<String>, Query, description = "Accepted and ignored"), ("accessVerificationId" = Option<String>, Query, description = "Accepted and ignored")), responses((status = 200, body = coffer_service::content::views::FileView, description = "The file"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn get_file(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    parse(&q, &FILE)?;
    let user = c.user.id.clone();
    let id = id.into_inner();
    Ok(HttpResponse::Ok().json(blocking(&st, move |ctx| files::get(ctx, &user, &id)).await?))
}

#[utoipa::path(put, path = "/rest/files/{id}", tag = "files", params(("id" = String, Path, description = "A file id")), request_body(content = Option<FileUpdateBody>, description = "Only the fields to change; none changes nothing"), responses((status = 200, body = coffer_service::content::views::FileView, description = "The file as changed"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 409, description = "`ERR_ENTITY_EXISTS`"), (status = 422, description = "`ERR_INPUT_INVALID_FORMAT`, `ERR_INPUT_INVALID_DATE`")), security(("bearer" = [])))]
pub async fn update_file(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<FileUpdateBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    parse(&q, &ONE)?;
    let name = body.name;
    let expire = opt_date("expire", body.expire)?;
    let user = c.user.id.clone();
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| {
        files::update(ctx, &user, &id, name.as_deref(), expire)
    })
    .await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(delete, path = "/rest/files/{id}", tag = "files", params(("id" = String, Path, description = "A file id")), responses((status = 204, description = "The file is in the trash"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn delete_file(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let user = c.user.id.clone();
    let id = id.into_inner();
    blocking(&st, move |ctx| files::delete(ctx, &user, &id)).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(patch, path = "/rest/files/{id}/actions/recover", tag = "files", params(("id" = String, Path, description = "A file id")), responses((status = 200, body = coffer_service::content::views::FileView, description = "The file, back from the trash"), (status = 403, description = "`ERR_ENTITY_DELETED`: its folder is in the trash"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 409, description = "`ERR_ENTITY_EXISTS`")), security(("bearer" = [])))]
pub async fn recover_file(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    parse(&q, &ONE)?;
    let user = c.user.id.clone();
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| {
        folders::recover(ctx, &user, &id)?;
        files::get(ctx, &user, &id)
    })
    .await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(get, path = "/rest/files/{id}/path", tag = "files", params(("id" = String, Path, description = "A file id")), responses((status = 200, body = crate::plumbing::schema::PathBody, description = "The folders from the caller's top down to the file, and the file"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn file_path(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let user = c.user.id.clone();
    let id = id.into_inner();
    let p = blocking(&st, move |ctx| files::path(ctx, &user, &id)).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"data": p})))
}

#[utoipa::path(get, path = "/rest/files/{id}/versions/{version}", tag = "files", params(("id" = String, Path, description = "A file id"), ("version" = String, Path, description = "A version id")), responses((status = 200, body = coffer_service::content::views::VersionView, description = "The version"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn get_version(
    Caller(c): Caller,
    st: Data<AppState>,
    path: Path<(String, String)>,
) -> Result<HttpResponse, RestError> {
    let (id, version) = path.into_inner();
    let user = c.user.id.clone();
    Ok(HttpResponse::Ok()
        .json(blocking(&st, move |ctx| files::version(ctx, &user, &id, &version)).await?))
}

fn ids_of(q: &ListQuery, body: Option<Vec<String>>) -> Result<Vec<String>, RestError> {
    let mut ids = q.extra("id:in").map(list::split_list).unwrap_or_default();
    ids.extend(text_list("ids", body, 64)?);
    if ids.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "ids").into());
    }
    if ids.len() > 1000 {
        return Err(ApiError::field(ErrorCode::InputMaxValue, "ids").into());
    }
    Ok(ids)
}

fn one_or_many(v: Vec<coffer_service::content::views::FileView>) -> HttpResponse {
    if v.len() == 1 {
        HttpResponse::Created().json(&v[0])
    } else {
        HttpResponse::Created().json(serde_json::json!({"data": v}))
    }
}

#[utoipa::path(post, path = "/rest/files/actions/move", tag = "files", params(("id:in" = Option<String>, Query, description = "Comma-separated file ids (or `ids` in the body)"), ("partialSuccess" = Option<String>, Query, description = "Accepted; every file must succeed")), request_body(content = FilesDestinationBody), responses((status = 201, body = coffer_service::content::views::FileView, description = "The moved file (several: `{data}`)"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_IS_BASE_DIR`, `ERR_ENTITY_IS_MY_DIR`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 409, description = "`ERR_ENTITY_EXISTS`"), (status = 413, description = "`ERR_SYSTEM_NO_STORAGE_AVAILABLE`"), (status = 422, description = "`ERR_INPUT_REQUIRED`")), security(("bearer" = [])))]
pub async fn move_files(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<FilesDestinationBody>,
) -> Result<HttpResponse, RestError> {
    let body = items_invalid(body, &["ids"])?;
    let q = parse(&q, &BULK_OPTIONAL)?;
    let ids = ids_of(&q, body.ids)?;
    let dest = body.destination_folder_id;
    let user = c.user.id.clone();
    Ok(one_or_many(
        blocking(&st, move |ctx| files::move_files(ctx, &user, &ids, &dest)).await?,
    ))
}

#[utoipa::path(post, path = "/rest/files/actions/copy", tag = "files", params(("id:in" = Option<String>, Query, description = "Comma-separated file ids (or `ids` in the body)"), ("partialSuccess" = Option<String>, Query, description = "Accepted; every file must succeed")), request_body(content = FilesDestinationBody), responses((status = 201, body = coffer_service::content::views::FileView, description = "The copy (several: `{data}`), named `name (n)` when the name is taken"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_IS_BASE_DIR`, `ERR_ENTITY_IS_MY_DIR`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 413, description = "`ERR_SYSTEM_NO_STORAGE_AVAILABLE`"), (status = 422, description = "`ERR_INPUT_REQUIRED`")), security(("bearer" = [])))]
pub async fn copy_files(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<FilesDestinationBody>,
) -> Result<HttpResponse, RestError> {
    let body = items_invalid(body, &["ids"])?;
    let q = parse(&q, &BULK_OPTIONAL)?;
    let ids = ids_of(&q, body.ids)?;
    let dest = body.destination_folder_id;
    let user = c.user.id.clone();
    Ok(one_or_many(
        blocking(&st, move |ctx| files::copy_files(ctx, &user, &ids, &dest)).await?,
    ))
}

/// `POST /rest/files/actions/move|copy`: the ids come as `id:in` or as `ids` in the body.
pub const BULK_OPTIONAL: ListSpec = ListSpec {
    with_fields: WITH,
    extra_params: &["id:in", "partialSuccess"],
    ..ListSpec::PLAIN
};

#[utoipa::path(get, path = "/rest/files/{id}/comments", tag = "comments", params(("id" = String, Path, description = "A file id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::content::views::CommentView>, description = "The comments"), (status = 403, description = "`ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn comments(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = parse(&q, &COMMENTS)?;
    let newest = q.order.1 == Dir::Desc;
    let user = c.user.id.clone();
    let id = id.into_inner();
    let (offset, limit) = (q.offset, q.limit);
    Ok(listing(
        Envelope::Metadata,
        &blocking(&st, move |ctx| {
            sharing::comments(ctx, &user, &id, newest, offset, limit)
        })
        .await?,
    ))
}

#[utoipa::path(post, path = "/rest/files/{id}/comments", tag = "comments", params(("id" = String, Path, description = "A file id")), request_body(content = CommentBody), responses((status = 200, body = coffer_service::content::views::CommentView, description = "The new comment"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_MAX_VALUE`, `ERR_INPUT_INVALID_FORMAT`, `ERR_INVALID_PARAMETER` (parentId)")), security(("bearer" = [])))]
pub async fn add_comment(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<CommentBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    parse(&q, &ONE)?;
    let contents = body.contents;
    let parent = body.parent_id;
    let user = c.user.id.clone();
    let id = id.into_inner();
    Ok(HttpResponse::Ok().json(
        blocking(&st, move |ctx| {
            sharing::add_comment(ctx, &user, &id, &contents, parent)
        })
        .await?,
    ))
}
