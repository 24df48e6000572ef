//! Favorites (`/rest/favorites`, `/rest/folders/actions/favorite`).

use crate::plumbing::body::Body;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{int_id, Caller, QueryPairs};
use crate::plumbing::respond::{links, listing, Envelope};
use crate::plumbing::schema::FavoriteBody;
use crate::plumbing::state::{blocking, AppState};
use actix_web::web::{self, Data, Path};
use actix_web::HttpResponse;
use coffer_domain::list::{self, Dir, FieldSpec, Kind, ListSpec, Op};
use coffer_errors::{ApiError, ErrorCode};
use coffer_service::favorites::{self as svc, Detail, FavoriteQuery, FavoriteView, Order};

/// `GET /rest/favorites`.
pub const LIST: ListSpec = ListSpec {
    filters: &[FieldSpec {
        name: "parentId",
        kind: Kind::Text,
        ops: &[Op::Eq, Op::In],
    }],
    order_fields: &["objects.name", "objects.created", "objects.modified"],
    default_order: ("objects.created", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: &["creator", "object"],
    extra_params: &["excludeEc"],
    bulk: false,
};

/// The bulk calls: `id:in` (required) and `partialSuccess`.
pub const BULK: ListSpec = ListSpec {
    bulk: true,
    ..ListSpec::PLAIN
};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/favorites")
            .route(web::get().to(list))
            .route(web::post().to(add)),
    )
    .service(web::resource("/favorites/{id}").route(web::delete().to(remove)))
    .service(
        web::resource("/folders/actions/favorite")
            .route(web::post().to(mark_folders))
            .route(web::delete().to(unmark_folders)),
    );
}

fn with_links(st: &AppState, mut v: FavoriteView, on: bool) -> FavoriteView {
    if on {
        v.links = Some(links(st.base_url(), "favorites", &v.id.to_string()));
    }
    v
}

#[utoipa::path(get, path = "/rest/favorites", tag = "favorites", params(("parentId" = Option<String>, Query, description = "Only favorites in this folder (also `parentId:in`)"), ("excludeEc" = Option<bool>, Query, description = "Leave out folders of external sources (Coffer has none among favorites)")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<FavoriteView>, description = "The caller's favorites whose objects they see, each with its `object`"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 422, description = "`ERR_INPUT_NOT_BOOLEAN`, `ERR_INPUT_INVALID_FORMAT`")), security(("bearer" = [])))]
pub async fn list(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &LIST)?;
    // Sources cannot be favorites, so there is nothing for `excludeEc` to leave out; its value
    // must still be a boolean.
    if let Some(v) = q.extra("excludeEc") {
        list::parse_bool("excludeEc", v)?;
    }
    let mut parents: Option<Vec<String>> = None;
    for f in &q.filters {
        let values = f
            .values
            .iter()
            .filter_map(|v| v.as_text().map(str::to_string));
        parents.get_or_insert_with(Vec::new).extend(values);
    }
    let fq = FavoriteQuery {
        parent_ids: parents,
        order: match q.order.0 {
            "objects.name" => Order::Name,
            "objects.modified" => Order::Modified,
            _ => Order::Created,
        },
        descending: q.order.1 == Dir::Desc,
        offset: q.offset,
        limit: q.limit,
        creator: q.with.iter().any(|w| w == "creator"),
    };
    let on = q.links();
    let mut l = blocking(&st, move |ctx| svc::list(ctx, c.user_id(), &fq)).await?;
    l.items = l
        .items
        .into_iter()
        .map(|v| with_links(&st, v, on))
        .collect();
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(post, path = "/rest/favorites", tag = "favorites", request_body(content = FavoriteBody), responses((status = 200, body = FavoriteView, description = "The new favorite"), (status = 403, description = "`ERR_ENTITY_DELETED`: the object is in the trash; `ERR_ENTITY_IS_BASE_DIR`, `ERR_ENTITY_IS_MY_DIR`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such folder or file, or one the caller does not see"), (status = 409, description = "`ERR_ENTITY_EXISTS`: a favorite already"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_STRING`, `ERR_INPUT_NOT_BOOLEAN`")), security(("bearer" = [])))]
pub async fn add(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<FavoriteBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let on = body.add_links.unwrap_or(false) || q.links();
    let id = body.object_id.into_text();
    let v = blocking(&st, move |ctx| {
        svc::add(ctx, c.user_id(), &id, Detail::default())
    })
    .await?;
    Ok(HttpResponse::Ok().json(with_links(&st, v, on)))
}

#[utoipa::path(delete, path = "/rest/favorites/{id}", tag = "favorites", params(("id" = i64, Path, description = "A favorite's id")), responses((status = 204, description = "Removed"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such favorite of the caller")), security(("bearer" = [])))]
pub async fn remove(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = int_id(&id)?;
    blocking(&st, move |ctx| svc::remove(ctx, c.user_id(), id)).await?;
    Ok(HttpResponse::NoContent().finish())
}

fn bulk_ids(q: &[(String, String)]) -> Result<(Vec<String>, bool, bool), RestError> {
    let q = list::parse(q, &BULK)?;
    let ids = q
        .id_in
        .clone()
        .ok_or_else(|| RestError(ApiError::field(ErrorCode::InputRequired, "id:in")))?;
    Ok((ids, q.partial_success, q.links()))
}

#[utoipa::path(post, path = "/rest/folders/actions/favorite", tag = "favorites", params(("id:in" = String, Query, description = "Comma-separated folder ids"), ("partialSuccess" = Option<bool>, Query, description = "Mark what can be marked; the rest in `failedIds`")), responses((status = 200, body = crate::plumbing::schema::FavoritesMarked, description = "The new favorites; with `partialSuccess`, `failedIds`"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 403, description = "`ERR_ENTITY_DELETED`, `ERR_ENTITY_IS_BASE_DIR`, `ERR_ENTITY_IS_MY_DIR` (`failedIds`)"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND` (`failedIds`)"), (status = 409, description = "`ERR_ENTITY_EXISTS` (`failedIds`)"), (status = 422, description = "`ERR_INPUT_REQUIRED`; `ERR_INVALID_PARAMETER`: a file (`failedIds`)")), security(("bearer" = [])))]
pub async fn mark_folders(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let (ids, partial, on) = bulk_ids(&q)?;
    let b = blocking(&st, move |ctx| {
        svc::mark_folders(ctx, c.user_id(), &ids, partial)
    })
    .await?;
    let data: Vec<FavoriteView> = b.done.into_iter().map(|v| with_links(&st, v, on)).collect();
    let mut body = serde_json::json!({
        "data": data,
        "metadata": {"total": data.len(), "limit": data.len().max(1), "offset": 0},
    });
    if !b.failed.is_empty() {
        body["failedIds"] = b.failed.into();
    }
    Ok(HttpResponse::Ok().json(body))
}

#[utoipa::path(delete, path = "/rest/folders/actions/favorite", tag = "favorites", params(("id:in" = String, Query, description = "Comma-separated folder ids"), ("partialSuccess" = Option<bool>, Query, description = "Unmark what can be unmarked; the rest in `failedIds`")), responses((status = 204, description = "Every folder unmarked"), (status = 200, body = crate::plumbing::schema::FailedIds, description = "With `partialSuccess`, when some ids failed: `failedIds`"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: not a folder the caller sees, or not their favorite (`failedIds`)"), (status = 422, description = "`ERR_INPUT_REQUIRED`")), security(("bearer" = [])))]
pub async fn unmark_folders(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let (ids, partial, _) = bulk_ids(&q)?;
    let b = blocking(&st, move |ctx| {
        svc::unmark_folders(ctx, c.user_id(), &ids, partial)
    })
    .await?;
    if b.failed.is_empty() {
        Ok(HttpResponse::NoContent().finish())
    } else {
        Ok(HttpResponse::Ok().json(serde_json::json!({"failedIds": b.failed})))
    }
}
