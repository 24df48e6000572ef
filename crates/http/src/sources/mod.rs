//! External sources (`/rest/sourceTypes*`, `/rest/sources*`, `/rest/users/me/pins`): the
//! handlers read the request and call `coffer_service::sources`; file content streams from the
//! source's connector on a blocking thread.

use crate::plumbing::body::Body;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{Caller, QueryPairs};
use crate::plumbing::respond::{created, links, listing, whole, Envelope};
use crate::plumbing::schema::{
    CloudAuthBody, PinsBody, SourceBody, SourceLoginBody, SourceUploadBody,
};
use crate::plumbing::state::{blocking, AppState};
use actix_web::http::{header, StatusCode};
use actix_web::web::{self, Bytes, Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use coffer_domain::list::{self, Dir, FieldSpec, Kind, ListQuery, ListSpec, Op};
use coffer_errors::{ApiError, ErrorCode};
use coffer_service::sources::browse::{
    self, Browse, Opened, Order, PreviewView, SourceContentView, Text, Which, With,
};
use coffer_service::sources::edit::{self, RefreshTokenView};
use coffer_service::sources::manage::{self, EcmAuthView, NewSource, SourceTypeView, SourceView};
use coffer_service::sources::transfer::{self, TransferView};
use coffer_service::sources::Login;
use std::io::Read as _;

/// `GET /rest/sourceTypes`.
pub const TYPES: ListSpec = ListSpec {
    filters: &[],
    order_fields: &["id", "name"],
    default_order: ("id", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: &[],
    extra_params: &[],
    bulk: false,
};

/// `GET /rest/sources`.
pub const SOURCES: ListSpec = ListSpec {
    filters: &[],
    order_fields: &[],
    default_order: ("id", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: &[],
    extra_params: &["include_kw", "include_container", "query", "search_type"],
    bulk: false,
};

/// `GET /rest/sources/{id}/query`: the parameters of a site search.
pub const SITE_QUERY: ListSpec = ListSpec {
    extra_params: &["include_kw", "include_container", "query", "search_type"],
    ..SOURCES
};

/// The sites a site search found (`SearchSharePointSitesResult`). No source Coffer connects to
/// has sites, so no answer carries one; the type documents the shape clients read.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct SiteSearchView {
    pub sites: Vec<SiteView>,
}

/// A site of a document-management source (`Site`).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteView {
    pub id: String,
    pub name: String,
    pub url: String,
    /// Whether the site is one of the caller's sources already.
    pub is_added: bool,
    pub ecm_type_id: String,
    pub repository: String,
}

const CONTENT_WITH: &[&str] = &["rootId", "pathIds", "sourceTypeId", "parent"];

const DATES: &[Op] = &[Op::Eq, Op::Gt, Op::Gte, Op::Lt, Op::Lte];

const BROWSE_FILTERS: &[FieldSpec] = &[
    FieldSpec {
        name: "name",
        kind: Kind::Text,
        ops: &[Op::Eq, Op::Contains],
    },
    FieldSpec {
        name: "description",
        kind: Kind::Text,
        ops: &[Op::Eq, Op::Contains],
    },
    FieldSpec {
        name: "created",
        kind: Kind::Text,
        ops: DATES,
    },
    FieldSpec {
        name: "modified",
        kind: Kind::Text,
        ops: DATES,
    },
    FieldSpec {
        name: "deleted",
        kind: Kind::Bool,
        ops: &[Op::Eq],
    },
];

/// `GET /rest/sources/{id}/folders` and `files`.
pub const BROWSE: ListSpec = ListSpec {
    filters: BROWSE_FILTERS,
    order_fields: &["id", "name", "created", "modified", "size"],
    default_order: ("name", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: CONTENT_WITH,
    extra_params: &[],
    bulk: false,
};

/// `GET /rest/sources/{id}/children`: `type` too.
pub const CHILDREN: ListSpec = ListSpec {
    filters: &[
        BROWSE_FILTERS[0],
        BROWSE_FILTERS[1],
        BROWSE_FILTERS[2],
        BROWSE_FILTERS[3],
        BROWSE_FILTERS[4],
        FieldSpec {
            name: "type",
            kind: Kind::Text,
            ops: &[Op::Eq],
        },
    ],
    ..BROWSE
};

/// One source folder or file: `with`.
pub const ONE: ListSpec = ListSpec {
    with_fields: CONTENT_WITH,
    ..ListSpec::PLAIN
};

/// `DELETE /rest/sources/files/{id}`: `forceDelete`.
pub const DELETE_FILE: ListSpec = ListSpec {
    extra_params: &["forceDelete"],
    ..ListSpec::PLAIN
};

/// `GET /rest/sources/{id}/content`: `inline`.
pub const CONTENT: ListSpec = ListSpec {
    extra_params: &["inline"],
    ..ListSpec::PLAIN
};

/// `GET /rest/sources/{id}/externalEdit`: the list parameters the interface names for it are
/// taken and ignored (the answer is one token, never a list); `with` is dropped before parsing,
/// as no value of it means anything here.
pub const EXTERNAL_EDIT: ListSpec = ListSpec {
    order_fields: &["name", "created", "modified", "files.size"],
    extra_params: &[
        "name",
        "name:contains",
        "userId",
        "userId:in",
        "created",
        "created:gt",
        "created:gte",
        "created:lt",
        "created:lte",
        "modified",
        "modified:gt",
        "modified:gte",
        "modified:lt",
        "modified:lte",
        "deleted",
        "expire",
        "expire:gt",
        "expire:gte",
        "expire:lt",
        "expire:lte",
        "isPushed",
        "locate_id",
    ],
    ..ListSpec::PLAIN
};

/// The bulk lock calls: `id:in` (required) and `partialSuccess`.
pub const BULK: ListSpec = ListSpec {
    bulk: true,
    ..ListSpec::PLAIN
};

/// `GET /rest/sources/files/actions/transferStatus`.
pub const TRANSFER_STATUS: ListSpec = ListSpec {
    filters: &[FieldSpec {
        name: "transactionId",
        kind: Kind::Text,
        ops: &[Op::Eq, Op::In],
    }],
    ..ListSpec::PLAIN
};

/// `GET /rest/sources/actions/downloadByTransaction`.
pub const BY_TRANSACTION: ListSpec = ListSpec {
    extra_params: &["transactionId"],
    ..ListSpec::PLAIN
};

pub fn routes(cfg: &mut web::ServiceConfig) {
    // Literal paths before the `{id}` ones that would also match them.
    cfg.service(web::resource("/sourceTypes").route(web::get().to(types)))
        .service(web::resource("/sourceTypes/{id}").route(web::get().to(source_type)))
        .service(
            web::resource("/users/me/pins")
                .route(web::post().to(pin))
                .route(web::delete().to(unpin)),
        )
        .service(
            web::resource("/sources")
                .route(web::get().to(list))
                .route(web::post().to(create)),
        )
        .service(web::resource("/sources/auth").route(web::post().to(cloud_auth)))
        .service(web::resource("/sources/actions/lock").route(web::patch().to(lock)))
        .service(web::resource("/sources/actions/unlock").route(web::patch().to(unlock)))
        .service(
            web::resource("/sources/actions/downloadByTransaction")
                .route(web::get().to(download_by_transaction)),
        )
        .service(
            web::resource("/sources/files/actions/transferStatus")
                .route(web::get().to(transfer_status)),
        )
        .service(
            web::resource("/sources/files/{id}")
                .route(web::get().to(file))
                .route(web::delete().to(delete_file)),
        )
        .service(
            web::resource("/sources/folders/{id}")
                .route(web::get().to(folder))
                .route(web::delete().to(delete_folder)),
        )
        .service(
            web::resource("/sources/{id}")
                .route(web::get().to(get))
                .route(web::delete().to(delete)),
        )
        .service(
            web::resource("/sources/{id}/auth")
                .route(web::get().to(auth_info))
                .route(web::post().to(set_auth)),
        )
        .service(web::resource("/sources/{id}/authStatus").route(web::get().to(auth_status)))
        .service(web::resource("/sources/{id}/query").route(web::get().to(site_search)))
        .service(web::resource("/sources/{id}/children").route(web::get().to(children)))
        .service(web::resource("/sources/{id}/folders").route(web::get().to(folders)))
        .service(web::resource("/sources/{id}/files").route(web::get().to(files)))
        .service(web::resource("/sources/{id}/preview").route(web::get().to(preview)))
        .service(web::resource("/sources/{id}/content").route(web::get().to(content)))
        .service(web::resource("/sources/{id}/externalEdit").route(web::get().to(external_edit)))
        .service(
            web::resource("/sources/{id}/actions/initiateDownload")
                .route(web::post().to(initiate_download)),
        )
        .service(web::resource("/sources/{id}/actions/file").route(web::post().to(upload)))
        .service(web::resource("/sources/actions/files/{id}").route(web::post().to(replace)))
        .service(web::resource("/files/{id}/actions/return").route(web::patch().to(return_file)));
}

#[utoipa::path(get, path = "/rest/sourceTypes", tag = "sources", responses((status = 200, body = crate::plumbing::schema::WithMetadata<SourceTypeView>, description = "The source types: WebDAV (`userCanSet`) and server directories (the operator's)"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`")), security(("bearer" = [])))]
pub async fn types(
    Caller(_c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &TYPES)?;
    let mut all = manage::types();
    if q.order.0 == "name" {
        all.sort_by(|a, b| a.name.cmp(&b.name));
    }
    if q.order.1 == Dir::Desc {
        all.reverse();
    }
    let on = q.links();
    let all = all
        .into_iter()
        .map(|mut t| {
            if on {
                t.links = Some(links(st.base_url(), "sourceTypes", &t.id.to_string()));
            }
            t
        })
        .collect();
    Ok(whole(Envelope::Metadata, all))
}

#[utoipa::path(get, path = "/rest/sourceTypes/{id}", tag = "sources", params(("id" = String, Path, description = "A source type's id")), responses((status = 200, body = SourceTypeView, description = "The source type"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn source_type(
    Caller(_c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let mut t = manage::source_type(&id)?;
    if q.links() {
        t.links = Some(links(st.base_url(), "sourceTypes", &t.id.to_string()));
    }
    Ok(HttpResponse::Ok().json(t))
}

fn source_links(st: &AppState, mut v: SourceView, on: bool) -> SourceView {
    if on {
        v.links = Some(links(st.base_url(), "sources", &v.id));
    }
    v
}

#[utoipa::path(get, path = "/rest/sources", tag = "sources", params(("query" = Option<String>, Query, description = "Only sources whose name contains this (without regard to case)"), ("include_kw" = Option<String>, Query, description = "Accepted; Coffer's sources have no keywords"), ("include_container" = Option<String>, Query, description = "Accepted; no source is a container of others"), ("search_type" = Option<String>, Query, description = "Accepted; names are matched by `query`")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<SourceView>, description = "The operator's directories (`sourceByUser` false) and the caller's own sources, with `pinned` and `pinnedTime`")), security(("bearer" = [])))]
pub async fn list(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &SOURCES)?;
    let query = q
        .extra("query")
        .map(str::to_string)
        .filter(|s| !s.is_empty());
    let on = q.links();
    let all = blocking(&st, move |ctx| {
        manage::list(ctx, c.user_id(), query.as_deref())
    })
    .await?;
    let total = all.len() as i64;
    let items = all
        .into_iter()
        .skip(q.offset.max(0) as usize)
        .take(q.limit.max(0) as usize)
        .map(|v| source_links(&st, v, on))
        .collect();
    Ok(listing(
        Envelope::Metadata,
        &coffer_service::platform::views::Listed {
            items,
            total,
            offset: q.offset,
            limit: q.limit,
        },
    ))
}

#[utoipa::path(post, path = "/rest/sources", tag = "sources", request_body(content = SourceBody), responses((status = 201, body = SourceView, description = "The new source, with `Location`; its credentials are never shown"), (status = 403, description = "`ERR_AUTH_EC_UPDATE_TOKEN`: the server refused the username and password"), (status = 422, description = "`ERR_INPUT_REQUIRED`; `ERR_INVALID_PARAMETER`: a name or URL the caller has already, a URL that is not http(s) or names an address Coffer does not connect to, an unknown or operator-only `sourceTypeId`"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`: the server did not answer as a WebDAV server")), security(("bearer" = [])))]
pub async fn create(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<SourceBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let on = body.add_links.unwrap_or(false) || q.links();
    let login = match (body.username, body.password) {
        (Some(l), Some(p)) if !l.is_empty() => Some(Login {
            login: l,
            password: p,
        }),
        (Some(l), None) if !l.is_empty() => {
            return Err(ApiError::field(ErrorCode::InputRequired, "password").into())
        }
        (_, Some(p)) if !p.is_empty() => {
            return Err(ApiError::field(ErrorCode::InputRequired, "username").into())
        }
        _ => None,
    };
    let n = NewSource {
        name: body.name,
        description: body.description.unwrap_or_default(),
        url: body.source_url,
        type_id: body.source_type_id,
        login,
    };
    let v = blocking(&st, move |ctx| manage::create(ctx, c.user_id(), n)).await?;
    let location = format!("{}/rest/sources/{}", st.base_url(), v.id);
    Ok(created(
        StatusCode::CREATED,
        location,
        &source_links(&st, v, on),
    ))
}

#[utoipa::path(get, path = "/rest/sources/{id}", tag = "sources", params(("id" = String, Path, description = "A source's id")), responses((status = 200, body = SourceView, description = "The source"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such source of the caller's")), security(("bearer" = [])))]
pub async fn get(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| manage::get(ctx, c.user_id(), &id)).await?;
    Ok(HttpResponse::Ok().json(source_links(&st, v, q.links())))
}

#[utoipa::path(delete, path = "/rest/sources/{id}", tag = "sources", params(("id" = String, Path, description = "A source's id")), responses((status = 204, description = "Deleted, with its credentials, pins and locks (nothing on the remote changes)"), (status = 403, description = "`ERR_ACCESS_USER`: an operator directory"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn delete(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    blocking(&st, move |ctx| manage::delete(ctx, c.user_id(), &id)).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(get, path = "/rest/sources/{id}/auth", tag = "sources", params(("id" = String, Path, description = "A source's id")), responses((status = 200, body = EcmAuthView, description = "How the source signs in: a WebDAV source takes a login and password (`POST`), so neither field is given"), (status = 403, description = "`ERR_ACCESS_USER`: an operator directory"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn auth_info(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| manage::auth_info(ctx, c.user_id(), &id)).await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(post, path = "/rest/sources/{id}/auth", tag = "sources", params(("id" = String, Path, description = "A source's id")), request_body(content = SourceLoginBody), responses((status = 200, description = "Checked against the server and stored encrypted"), (status = 403, description = "`ERR_ACCESS_USER`: an operator directory; `ERR_AUTH_EC_UPDATE_TOKEN`: the server refused them (nothing changed)"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "`ERR_INPUT_REQUIRED`; `ERR_INVALID_PARAMETER`: the source's address is refused"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`: the server did not answer")), security(("bearer" = [])))]
pub async fn set_auth(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<SourceLoginBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let login = Login {
        login: body.login,
        password: body.password,
    };
    blocking(&st, move |ctx| {
        manage::set_login(ctx, c.user_id(), &id, login)
    })
    .await?;
    Ok(HttpResponse::Ok().finish())
}

#[utoipa::path(get, path = "/rest/sources/{id}/authStatus", tag = "sources", params(("id" = String, Path, description = "A source's id")), responses((status = 200, description = "The source's server takes the stored credentials"), (status = 403, description = "`ERR_AUTH_EC_UPDATE_TOKEN`: it refused them; give new ones with `POST /rest/sources/{id}/auth`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`: the server did not answer")), security(("bearer" = [])))]
pub async fn auth_status(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    blocking(&st, move |ctx| manage::auth_status(ctx, c.user_id(), &id)).await?;
    Ok(HttpResponse::Ok().finish())
}

#[utoipa::path(get, path = "/rest/sources/{id}/query", tag = "sources", params(("id" = String, Path, description = "A source's id"), ("query" = Option<String>, Query, description = "The text a site's name contains"), ("include_kw" = Option<bool>, Query, description = "Include Coffer's own sources"), ("include_container" = Option<bool>, Query, description = "Include container sites"), ("search_type" = Option<String>, Query, description = "How the source searches")), responses((status = 200, body = SiteSearchView, description = "The sites found (never: no source Coffer connects to has sites)"), (status = 403, description = "`ERR_SITE_SEARCH`: the source has no site search (WebDAV servers and server directories have none); `ERR_AUTH_EC_UPDATE_TOKEN`: the source's server refused the stored credentials (answered first)"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such source of the caller's"), (status = 422, description = "`ERR_INPUT_NOT_BOOLEAN` (`include_kw`, `include_container`)")), security(("bearer" = [])))]
pub async fn site_search(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &SITE_QUERY)?;
    for flag in ["include_kw", "include_container"] {
        if let Some(v) = q.extra(flag) {
            list::parse_bool(flag, v)?;
        }
    }
    let id = id.into_inner();
    let found = blocking(&st, move |ctx| manage::site_search(ctx, c.user_id(), &id)).await?;
    match found {}
}

#[utoipa::path(post, path = "/rest/sources/auth", tag = "sources", request_body(content = CloudAuthBody), responses((status = 200, description = "The cloud sign-in completed (never: Coffer has no cloud provider configured)"), (status = 422, description = "`ERR_INPUT_REQUIRED`; `ERR_INVALID_PARAMETER`: no sign-in is pending with this `state`")), security(("bearer" = [])))]
pub async fn cloud_auth(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<CloudAuthBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    list::parse(&q, &ListSpec::PLAIN)?;
    blocking(&st, move |ctx| {
        manage::complete_cloud_auth(ctx, c.user_id(), &body.state)
    })
    .await?;
    Ok(HttpResponse::Ok().finish())
}

#[utoipa::path(post, path = "/rest/users/me/pins", tag = "sources", request_body(content = PinsBody), responses((status = 204, description = "Pinned (a source pinned already keeps its `pinnedTime`)"), (status = 400, description = "`ERR_REQUEST_INVALID_JSON`"), (status = 422, description = "`ERR_INPUT_REQUIRED`; `ERR_INVALID_PARAMETER`: `type` is not `source`, or an id names no source of the caller's (nothing pinned)")), security(("bearer" = [])))]
pub async fn pin(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<PinsBody>,
) -> Result<HttpResponse, RestError> {
    pins(c, st, q, body, true).await
}

#[utoipa::path(delete, path = "/rest/users/me/pins", tag = "sources", request_body(content = PinsBody), responses((status = 204, description = "Unpinned"), (status = 400, description = "`ERR_REQUEST_INVALID_JSON`"), (status = 422, description = "`ERR_INPUT_REQUIRED`; `ERR_INVALID_PARAMETER`: `type` is not `source`, or an id names no source of the caller's (nothing unpinned)")), security(("bearer" = [])))]
pub async fn unpin(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<PinsBody>,
) -> Result<HttpResponse, RestError> {
    pins(c, st, q, body, false).await
}

async fn pins(
    c: coffer_service::platform::auth::Caller,
    st: Data<AppState>,
    q: Vec<(String, String)>,
    body: Result<PinsBody, RestError>,
    on: bool,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    list::parse(&q, &ListSpec::PLAIN)?;
    blocking(&st, move |ctx| {
        manage::set_pins(ctx, c.user_id(), &body.kind, &body.ids, on)
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Creation or modification times the filters of `field` allow: from (inclusive), until
/// (exclusive); a bare date is a whole day (UTC).
fn span(q: &ListQuery, field: &str) -> Result<(Option<i64>, Option<i64>), RestError> {
    let (mut from, mut until): (Option<i64>, Option<i64>) = (None, None);
    for f in q.filters.iter().filter(|f| f.field == field) {
        let v = f.value().as_text().unwrap_or_default();
        let t = crate::content::parse_date(field, v)?;
        let day = if v.len() == 10 { 86_400 } else { 1 };
        let (low, high) = match f.op {
            Op::Gt => (Some(t + day), None),
            Op::Gte => (Some(t), None),
            Op::Lt => (None, Some(t)),
            Op::Lte => (None, Some(t + day)),
            _ => (Some(t), Some(t + day)),
        };
        if let Some(l) = low {
            from = Some(from.map_or(l, |x| x.max(l)));
        }
        if let Some(h) = high {
            until = Some(until.map_or(h, |x| x.min(h)));
        }
    }
    Ok((from, until))
}

fn with(q: &ListQuery) -> With {
    let has = |n: &str| q.with.iter().any(|w| w == n);
    With {
        root_id: has("rootId"),
        path_ids: has("pathIds"),
        source_type_id: has("sourceTypeId"),
        parent: has("parent"),
    }
}

fn browse(q: &ListQuery, which: Which) -> Result<Browse, RestError> {
    let mut b = Browse {
        which,
        order: match q.order.0 {
            "id" => Order::Id,
            "created" => Order::Created,
            "modified" => Order::Modified,
            "size" => Order::Size,
            _ => Order::Name,
        },
        descending: q.order.1 == Dir::Desc,
        offset: q.offset,
        limit: q.limit,
        with: with(q),
        created: span(q, "created")?,
        modified: span(q, "modified")?,
        ..Browse::default()
    };
    for f in &q.filters {
        let text = || f.value().as_text().unwrap_or_default().to_string();
        match (f.field, f.op) {
            ("name", Op::Contains) => b.names.push(Text::Contains(text())),
            ("name", _) => b.names.push(Text::Eq(text())),
            ("description", Op::Contains) => b.descriptions.push(Text::Contains(text())),
            ("description", _) => b.descriptions.push(Text::Eq(text())),
            ("deleted", _) => b.deleted = Some(matches!(f.value(), list::Value::Bool(true))),
            ("type", _) => match text().as_str() {
                "d" => b.kind = Some('d'),
                "f" => b.kind = Some('f'),
                _ => return Err(ApiError::field(ErrorCode::InputNotInList, "type").into()),
            },
            _ => {}
        }
    }
    Ok(b)
}

fn content_links(st: &AppState, mut v: SourceContentView, on: bool) -> SourceContentView {
    if on {
        let collection = if v.kind == "d" {
            "sources/folders"
        } else {
            "sources/files"
        };
        v.links = Some(links(st.base_url(), collection, &v.id));
    }
    v
}

async fn browse_list(
    c: coffer_service::platform::auth::Caller,
    st: Data<AppState>,
    id: String,
    q: Vec<(String, String)>,
    spec: &ListSpec,
    which: Which,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, spec)?;
    let b = browse(&q, which)?;
    let on = q.links();
    let mut l = blocking(&st, move |ctx| browse::list(ctx, c.user_id(), &id, &b)).await?;
    l.items = l
        .items
        .into_iter()
        .map(|v| content_links(&st, v, on))
        .collect();
    // The `{data, metadata}` envelope, written by hand: what `listing` writes, for less.
    Ok(HttpResponse::Ok()
        .content_type(actix_web::http::header::ContentType::json())
        .body(coffer_service::sources::json::listing(&l)))
}

#[utoipa::path(get, path = "/rest/sources/{id}/children", tag = "sources", params(("id" = String, Path, description = "A source's id (its root) or a source folder's id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<SourceContentView>, description = "The folders and files directly inside, read live from the source; `name`, `description` (source entries have none), `created`, `modified` (a day or an RFC 3339 time, with `:gt`, `:gte`, `:lt`, `:lte`), `deleted` (true lists nothing), `type` (`d` or `f`)"), (status = 403, description = "`ERR_AUTH_EC_UPDATE_TOKEN`: the source's server refused the stored credentials; `ERR_ACCESS_USER`: the source refused access"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such source or folder of the caller's"), (status = 422, description = "`ERR_INPUT_INVALID_DATE`, `ERR_INPUT_NOT_IN_LIST` (type)"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`: the source did not answer")), security(("bearer" = [])))]
pub async fn children(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    browse_list(c, st, id.into_inner(), q, &CHILDREN, Which::All).await
}

#[utoipa::path(get, path = "/rest/sources/{id}/folders", tag = "sources", params(("id" = String, Path, description = "A source's id (its root) or a source folder's id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<SourceContentView>, description = "The folders directly inside, with the filters of `children` but `type`"), (status = 403, description = "`ERR_AUTH_EC_UPDATE_TOKEN`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "`ERR_INPUT_INVALID_DATE`"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`")), security(("bearer" = [])))]
pub async fn folders(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    browse_list(c, st, id.into_inner(), q, &BROWSE, Which::Folders).await
}

#[utoipa::path(get, path = "/rest/sources/{id}/files", tag = "sources", params(("id" = String, Path, description = "A source's id (its root) or a source folder's id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<SourceContentView>, description = "The files directly inside, with `locked`, `size` and `mime`; the filters of `children` but `type`"), (status = 403, description = "`ERR_AUTH_EC_UPDATE_TOKEN`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "`ERR_INPUT_INVALID_DATE`"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`")), security(("bearer" = [])))]
pub async fn files(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    browse_list(c, st, id.into_inner(), q, &BROWSE, Which::Files).await
}

async fn one(
    c: coffer_service::platform::auth::Caller,
    st: Data<AppState>,
    id: String,
    q: Vec<(String, String)>,
    folder: bool,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ONE)?;
    let w = with(&q);
    let on = q.links();
    let v = blocking(&st, move |ctx| {
        browse::get(ctx, c.user_id(), &id, folder, w)
    })
    .await?;
    Ok(HttpResponse::Ok().json(content_links(&st, v, on)))
}

#[utoipa::path(get, path = "/rest/sources/files/{id}", tag = "sources", params(("id" = String, Path, description = "A source file's id")), responses((status = 200, body = SourceContentView, description = "The file (`SourceFile`), read live from the source"), (status = 403, description = "`ERR_AUTH_EC_UPDATE_TOKEN`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such file (a folder's id too)"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`")), security(("bearer" = [])))]
pub async fn file(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    one(c, st, id.into_inner(), q, false).await
}

#[utoipa::path(get, path = "/rest/sources/folders/{id}", tag = "sources", params(("id" = String, Path, description = "A source folder's id (a source's id is its root)")), responses((status = 200, body = SourceContentView, description = "The folder (`SourceFolder`)"), (status = 403, description = "`ERR_AUTH_EC_UPDATE_TOKEN`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such folder (a file's id too)"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`")), security(("bearer" = [])))]
pub async fn folder(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    one(c, st, id.into_inner(), q, true).await
}

#[utoipa::path(delete, path = "/rest/sources/files/{id}", tag = "sources", params(("id" = String, Path, description = "A source file's id"), ("forceDelete" = Option<bool>, Query, description = "Delete a file the caller holds locked (their lock goes with it)")), responses((status = 200, description = "Deleted on the source"), (status = 403, description = "`ERR_AUTH_EC_UPDATE_TOKEN`; `ERR_ACCESS_USER`: the source takes no writes"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "`ERR_FILE_IS_IN_USE_BY_OTHER_USER`, `ERR_FILE_IS_IN_USE_BY_CURRENT_USER`, `ERR_INPUT_NOT_BOOLEAN`"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`")), security(("bearer" = [])))]
pub async fn delete_file(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &DELETE_FILE)?;
    let force = match q.extra("forceDelete") {
        Some(v) => list::parse_bool("forceDelete", v)?,
        None => false,
    };
    let id = id.into_inner();
    blocking(&st, move |ctx| {
        browse::delete_file(ctx, c.user_id(), &id, force)
    })
    .await?;
    Ok(HttpResponse::Ok().finish())
}

#[utoipa::path(delete, path = "/rest/sources/folders/{id}", tag = "sources", params(("id" = String, Path, description = "A source folder's id")), responses((status = 200, description = "Deleted on the source, with what it held"), (status = 403, description = "`ERR_AUTH_EC_UPDATE_TOKEN`; `ERR_ACCESS_USER`: the root of a source, or a source that takes no writes; `ERR_ENTITY_CONTAINS_LOCKED_FILES`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`")), security(("bearer" = [])))]
pub async fn delete_folder(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    blocking(&st, move |ctx| browse::delete_folder(ctx, c.user_id(), &id)).await?;
    Ok(HttpResponse::Ok().finish())
}

#[utoipa::path(get, path = "/rest/sources/{id}/preview", tag = "sources", params(("id" = String, Path, description = "A source file's id")), responses((status = 200, body = PreviewView, description = "`ready` with `link` (images, PDF, audio, video, plain text: shown in place from the content), `failed` (no preview of this type) or `not_supported_empty`"), (status = 403, description = "`ERR_ACCESS_USER`: a folder; `ERR_AUTH_EC_UPDATE_TOKEN`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`")), security(("bearer" = [])))]
pub async fn preview(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| browse::preview(ctx, c.user_id(), &id)).await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(get, path = "/rest/sources/{id}/content", tag = "sources", params(("id" = String, Path, description = "A source file's id"), ("inline" = Option<bool>, Query, description = "Show in place rather than save: granted only for images, PDF, audio and video"), ("Range" = Option<String>, Header, description = "One byte range (`bytes=a-b`, `a-`, `-n`)")), responses((status = 200, description = "The content, streamed from the source (`Content-Disposition: attachment`)", content_type = "*/*"), (status = 206, description = "The range asked for", content_type = "*/*"), (status = 403, description = "`ERR_AUTH_EC_UPDATE_TOKEN`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such file (a folder's id too)"), (status = 416, description = "`ERR_INVALID_PARAMETER`: the range lies outside the content"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`")), security(("bearer" = [])))]
pub async fn content(
    Caller(c): Caller,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    use coffer_domain::content as rules;
    let q = list::parse(&q, &CONTENT)?;
    let inline = match q.extra("inline") {
        Some(v) => list::parse_bool("inline", v)?,
        None => false,
    };
    let range = req
        .headers()
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let id = id.into_inner();
    let opened = blocking(&st, move |ctx| {
        browse::open(ctx, c.user_id(), &id, range.as_deref())
    })
    .await?;
    let d = match opened {
        Opened::Content(d) => d,
        Opened::Unsatisfiable(size) => {
            let mut e = ApiError::field(ErrorCode::InvalidParameter, "Range")
                .with_message("The range lies outside the content.");
            e.status = 416;
            let mut res = crate::plumbing::error::rest_error(&e);
            if let Ok(v) = header::HeaderValue::from_str(&format!("bytes */{size}")) {
                res.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            return Ok(res);
        }
    };
    let inline = inline && rules::serve_inline(&d.mime);
    let (status, length) = match d.span {
        Some((a, b)) => (StatusCode::PARTIAL_CONTENT, b - a + 1),
        None => (StatusCode::OK, d.size),
    };
    let mut res = HttpResponse::build(status);
    res.insert_header((header::ACCEPT_RANGES, "bytes"))
        .insert_header((
            header::CONTENT_DISPOSITION,
            rules::content_disposition(&d.name, inline),
        ))
        .insert_header(("Content-Security-Policy", "sandbox; default-src 'none'"))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header((header::CACHE_CONTROL, "private, no-cache"))
        .content_type(if inline {
            d.mime.as_str()
        } else if d.mime.starts_with("text/html")
            || d.mime.contains("xml")
            || d.mime.contains("javascript")
        {
            "application/octet-stream"
        } else {
            d.mime.as_str()
        });
    if let Some((a, b)) = d.span {
        res.insert_header((header::CONTENT_RANGE, format!("bytes {a}-{b}/{}", d.size)));
    }
    if length == 0 {
        return Ok(res.body(Bytes::new()));
    }
    Ok(res.no_chunking(length).streaming(reader_stream(d.body)))
}

#[utoipa::path(get, path = "/rest/sources/{id}/externalEdit", tag = "sources", params(("id" = String, Path, description = "A source file's id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<RefreshTokenView>, description = "One refresh token, for the caller and the caller's client, that expires 300 seconds after it was made; its scope reaches only this file's download (`GET /rest/sources/{id}/content`) and its upload back (`POST /rest/sources/actions/files/{id}`), and the tokens exchanged for it expire by then too"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 403, description = "`ERR_ACCESS_USER`: a source that takes no writes, a call the caller's own token could not make, or a client that does not use refresh tokens; `ERR_ENTITY_LOCKED`: another user holds the file locked; `ERR_AUTH_EC_UPDATE_TOKEN`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such file of the caller's (a folder's id too)"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`")), security(("bearer" = [])))]
pub async fn external_edit(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q: Vec<(String, String)> = q.into_iter().filter(|(k, _)| k != "with").collect();
    list::parse(&q, &EXTERNAL_EDIT)?;
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| edit::external_edit(ctx, &c, &id)).await?;
    Ok(whole(Envelope::Metadata, vec![v]))
}

/// A blocking reader as a response body: a blocking thread reads it into a small channel.
fn reader_stream(
    mut body: Box<dyn std::io::Read + Send>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::task::spawn_blocking(move || loop {
        let mut buf = vec![0u8; 256 * 1024];
        match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                buf.truncate(n);
                if tx.blocking_send(Ok(Bytes::from(buf))).is_err() {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                log::warn!("reading a source file failed: {e}");
                let _ = tx.blocking_send(Err(e));
                break;
            }
        }
    });
    futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|r| (r, rx)) })
}

fn bulk_ids(q: &[(String, String)]) -> Result<(Vec<String>, bool), RestError> {
    let q = list::parse(q, &BULK)?;
    let ids = q
        .id_in
        .clone()
        .ok_or_else(|| RestError(ApiError::field(ErrorCode::InputRequired, "id:in")))?;
    Ok((ids, q.partial_success))
}

fn bulk_answer(failed: Vec<String>) -> HttpResponse {
    if failed.is_empty() {
        HttpResponse::Ok().finish()
    } else {
        HttpResponse::Ok().json(serde_json::json!({"failedIds": failed}))
    }
}

#[utoipa::path(patch, path = "/rest/sources/actions/lock", tag = "sources", params(("id:in" = String, Query, description = "Comma-separated source file ids"), ("partialSuccess" = Option<bool>, Query, description = "Lock what can be locked; the rest in `failedIds`")), responses((status = 200, description = "Locked (with `partialSuccess`, the ids that failed in `failedIds`)"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 403, description = "`ERR_ENTITY_LOCKED`: locked by another user; `ERR_AUTH_EC_UPDATE_TOKEN` (`failedIds`)"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND` (`failedIds`)"), (status = 422, description = "`ERR_INPUT_REQUIRED`; `ERR_INVALID_PARAMETER`: a folder (`failedIds`)"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`")), security(("bearer" = [])))]
pub async fn lock(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let (ids, partial) = bulk_ids(&q)?;
    let b = blocking(&st, move |ctx| {
        browse::lock(ctx, c.user_id(), &ids, partial)
    })
    .await?;
    Ok(bulk_answer(b.failed))
}

#[utoipa::path(patch, path = "/rest/sources/actions/unlock", tag = "sources", params(("id:in" = String, Query, description = "Comma-separated source file ids"), ("partialSuccess" = Option<bool>, Query, description = "Unlock what can be unlocked; the rest in `failedIds`")), responses((status = 200, description = "Unlocked (with `partialSuccess`, the ids that failed in `failedIds`)"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 403, description = "`ERR_ACCESS_USER`: locked by another user; `ERR_AUTH_EC_UPDATE_TOKEN` (`failedIds`)"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND` (`failedIds`)"), (status = 422, description = "`ERR_INPUT_REQUIRED`; `ERR_INVALID_PARAMETER`: a folder (`failedIds`)"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`")), security(("bearer" = [])))]
pub async fn unlock(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let (ids, partial) = bulk_ids(&q)?;
    let b = blocking(&st, move |ctx| {
        browse::unlock(ctx, c.user_id(), &ids, partial)
    })
    .await?;
    Ok(bulk_answer(b.failed))
}

#[utoipa::path(post, path = "/rest/sources/{id}/actions/initiateDownload", tag = "sources", params(("id" = String, Path, description = "A source file's id")), responses((status = 200, body = TransferView, description = "The transfer into the caller's My Folder, received (`status` `0`); follow it with `transferStatus`"), (status = 403, description = "`ERR_ACCESS_USER`: a folder; `ERR_AUTH_EC_UPDATE_TOKEN`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`")), security(("bearer" = [])))]
pub async fn initiate_download(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| {
        transfer::initiate_download(ctx, c.user_id(), &id)
    })
    .await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(get, path = "/rest/sources/files/actions/transferStatus", tag = "sources", params(("transactionId" = Option<String>, Query, description = "A transaction id (also `transactionId:in`)")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<TransferView>, description = "The caller's transfers among those named (unknown ones are left out)"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 422, description = "`ERR_INPUT_REQUIRED`: no transaction id")), security(("bearer" = [])))]
pub async fn transfer_status(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &TRANSFER_STATUS)?;
    let ids: Vec<String> = q
        .filters
        .iter()
        .flat_map(|f| {
            f.values
                .iter()
                .filter_map(|v| v.as_text().map(str::to_string))
        })
        .collect();
    if ids.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "transactionId").into());
    }
    let v = blocking(&st, move |ctx| transfer::status(ctx, c.user_id(), &ids)).await?;
    Ok(whole(Envelope::Metadata, v))
}

#[utoipa::path(get, path = "/rest/sources/actions/downloadByTransaction", tag = "sources", params(("transactionId" = String, Query, description = "A completed transfer into Coffer"), ("Range" = Option<String>, Header, description = "One byte range")), responses((status = 200, description = "The content of the file the transfer made in Coffer", content_type = "*/*"), (status = 206, description = "The range asked for", content_type = "*/*"), (status = 304, description = "Not modified"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such transfer of the caller's, or it has not completed"), (status = 416, description = "`ERR_INVALID_PARAMETER`"), (status = 422, description = "`ERR_INPUT_REQUIRED`")), security(("bearer" = [])))]
pub async fn download_by_transaction(
    Caller(c): Caller,
    st: Data<AppState>,
    req: HttpRequest,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &BY_TRANSACTION)?;
    let tid = q
        .extra("transactionId")
        .filter(|t| !t.is_empty())
        .ok_or_else(|| RestError(ApiError::field(ErrorCode::InputRequired, "transactionId")))?
        .to_string();
    let user = c.user_id().to_string();
    let d = blocking(&st, move |ctx| transfer::download(ctx, &user, &tid)).await?;
    crate::content::transfer::serve_as(
        &st,
        &req,
        crate::content::transfer::Served::File(c.user_id()),
        d,
        false,
    )
    .await
}

#[utoipa::path(post, path = "/rest/sources/{id}/actions/file", tag = "sources", params(("id" = String, Path, description = "A source's id (its root) or a source folder's id")), request_body(content = SourceUploadBody, content_type = "multipart/form-data"), responses((status = 200, body = TransferView, description = "Written to the source under the part's file name; the transfer, completed"), (status = 403, description = "`ERR_AUTH_EC_UPDATE_TOKEN`; `ERR_ACCESS_USER`: the source takes no writes"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 409, description = "`ERR_ENTITY_EXISTS`: a file or folder of that name is there (replace a file through `POST /rest/sources/actions/files/{id}`)"), (status = 408, description = "`ERR_REQUEST_TIMEOUT`"), (status = 422, description = "`ERR_INPUT_REQUIRED` (body), `ERR_INPUT_INVALID_FORMAT` (the name)"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`")), security(("bearer" = [])))]
pub async fn upload(
    Caller(c): Caller,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    payload: web::Payload,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    write_out(c, st, req, id.into_inner(), payload, false).await
}

#[utoipa::path(post, path = "/rest/sources/actions/files/{id}", tag = "sources", params(("id" = String, Path, description = "A source file's id")), request_body(content = SourceUploadBody, content_type = "multipart/form-data"), responses((status = 200, body = TransferView, description = "The file's content replaced on the source; the transfer, completed"), (status = 403, description = "`ERR_AUTH_EC_UPDATE_TOKEN`; `ERR_ACCESS_USER`: the source takes no writes; `ERR_ENTITY_LOCKED`: locked on the server by someone else"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such file (a folder's id too)"), (status = 408, description = "`ERR_REQUEST_TIMEOUT`"), (status = 422, description = "`ERR_INPUT_REQUIRED` (body)"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`")), security(("bearer" = [])))]
pub async fn replace(
    Caller(c): Caller,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    payload: web::Payload,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    write_out(c, st, req, id.into_inner(), payload, true).await
}

/// Streams the multipart `body` part to the source: the part's bytes go through a small channel
/// to the connector's blocking write, which runs while they arrive.
async fn write_out(
    c: coffer_service::platform::auth::Caller,
    st: Data<AppState>,
    req: HttpRequest,
    id: String,
    payload: web::Payload,
    replace: bool,
) -> Result<HttpResponse, RestError> {
    use crate::content::transfer::{is_multipart, rest_multipart_error, text_field};
    use futures_util::StreamExt as _;
    if !is_multipart(&req) {
        return Err(ApiError::new(ErrorCode::RequestInvalidJson)
            .with_message("The file must be sent as multipart/form-data in `body`.")
            .into());
    }
    let mut mp = actix_multipart::Multipart::new(req.headers(), payload.into_inner());
    let mut done: Option<TransferView> = None;
    while let Some(field) = mp.next().await {
        let mut field = field.map_err(rest_multipart_error)?;
        let name = field.name().unwrap_or("").to_string();
        if name != "body" || done.is_some() {
            text_field(&mut field).await?;
            continue;
        }
        let file_name = field
            .content_disposition()
            .and_then(|cd| cd.get_filename().map(str::to_string))
            .unwrap_or_default()
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or_default()
            .to_string();
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
        let user = c.user_id().to_string();
        let target = id.clone();
        let write = blocking(&st, move |ctx| {
            let mut body = ChannelReader {
                rx,
                current: Bytes::new(),
            };
            let name = (!replace).then_some(file_name.as_str());
            transfer::write_out(ctx, &user, &target, name, &mut body, None, replace)
        });
        let feed = async move {
            let mut failure = None;
            while let Some(chunk) = field.next().await {
                let item = chunk.map_err(|e| std::io::Error::other(e.to_string()));
                let stop = item.is_err();
                if let Err(e) = &item {
                    failure = Some(std::io::Error::new(e.kind(), e.to_string()));
                }
                // The writer stopped (it refused the target): the rest is not wanted.
                if tx.send(item).await.is_err() || stop {
                    break;
                }
            }
            failure
        };
        let (written, failure) = futures_util::future::join(write, feed).await;
        if failure.is_some() {
            return Err(ApiError::new(ErrorCode::RequestInvalidJson)
                .with_message("The request body is not valid multipart/form-data.")
                .into());
        }
        done = Some(written?);
    }
    let v = done.ok_or_else(|| RestError(ApiError::field(ErrorCode::InputRequired, "body")))?;
    Ok(HttpResponse::Ok().json(v))
}

/// The bytes of a multipart part as a blocking reader, fed by the request's task.
struct ChannelReader {
    rx: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
    current: Bytes,
}

impl std::io::Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            // On a blocking thread: the request's task sends the part's pieces.
            match self.rx.blocking_recv() {
                Some(Ok(b)) => self.current = b,
                Some(Err(e)) => return Err(e),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current = self.current.slice(n..);
        Ok(n)
    }
}

#[utoipa::path(patch, path = "/rest/files/{id}/actions/return", tag = "sources", params(("id" = String, Path, description = "A Coffer file a transfer brought in from a source")), responses((status = 200, body = SourceContentView, description = "Checked in: the file's current version written over the remote file (through the caller's lock, which is then given back), the Coffer copy moved to the trash; the remote file (`SourceFile`)"), (status = 403, description = "`ERR_AUTH_EC_UPDATE_TOKEN`: the source's server refused the stored credentials; `ERR_ENTITY_LOCKED`: another user holds the remote file locked; `ERR_ACCESS_USER`: the caller may not download or delete the file, or the source takes no writes; `ERR_ENTITY_DELETED`: the file is in the trash; `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such file of the caller's"), (status = 422, description = "`ERR_INVALID_PARAMETER` (`id`): the file was not transferred in from a source of the caller's"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`: the source did not answer")), security(("bearer" = [])))]
pub async fn return_file(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let v = transfer::return_file(&st.ctx, c.user_id(), &id).await?;
    Ok(HttpResponse::Ok().json(v))
}
