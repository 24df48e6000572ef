//! `/rest/locations`: everyone reads; system administrators write.

use crate::plumbing::body::Body;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{int_id, Caller, QueryPairs, SystemAdmin};
use crate::plumbing::respond::{created, linked, linked_page, listing, Envelope, Linked};
use crate::plumbing::schema::LocationBody;
use crate::plumbing::state::{blocking, AppState};
use actix_web::http::StatusCode;
use actix_web::web::{self, Data, Path};
use actix_web::HttpResponse;
use coffer_domain::list::{self, Dir, ListSpec};
use coffer_service::platform::locations as svc;
use coffer_service::platform::views::LocationView;

pub const LIST: ListSpec = ListSpec {
    filters: &[],
    order_fields: &["name"],
    default_order: ("name", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: &[],
    extra_params: &[],
    bulk: false,
};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/locations")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(
        web::resource("/locations/{id}")
            .route(web::get().to(get))
            .route(web::delete().to(delete)),
    );
}

impl Linked for LocationView {
    const COLLECTION: &'static str = "locations";

    fn link_id(&self) -> String {
        self.id.to_string()
    }

    fn set_links(&mut self, links: Vec<coffer_service::platform::views::Link>) {
        self.links = Some(links);
    }
}

#[utoipa::path(get, path = "/rest/locations", tag = "locations", responses((status = 200, body = crate::plumbing::schema::WithMetadata<LocationView>, description = "The locations")), security(("bearer" = [])))]
pub async fn list(
    Caller(_c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &LIST)?;
    let on = q.links();
    let l = blocking(&st, move |ctx| svc::list(ctx, &q)).await?;
    let l = linked_page(st.base_url(), l, on);
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(post, path = "/rest/locations", tag = "locations", request_body(content = crate::plumbing::schema::LocationBody), responses((status = 200, body = crate::plumbing::schema::LocationCreated, description = "`{id, name, dns}`; the whole entity with `returnEntity=true` or links; with `Location`"), (status = 403, description = "`ERR_ACCESS_SYSTEM_ADMIN`"), (status = 409, description = "`ERR_ENTITY_EXISTS`: the name is taken"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_INVALID_FORMAT`")), security(("bearer" = [])))]
pub async fn create(
    SystemAdmin(c): SystemAdmin,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<LocationBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let (name, domain) = (body.name, body.domain);
    let on = body.add_links.unwrap_or(false) || q.links();
    let v = blocking(&st, move |ctx| svc::create(ctx, &c, &name, &domain)).await?;
    let location = format!("{}/rest/locations/{}", st.base_url(), v.id);
    let v = linked(st.base_url(), v, on);
    if q.return_entity || on {
        Ok(created(StatusCode::OK, location, &v))
    } else {
        Ok(created(
            StatusCode::OK,
            location,
            &serde_json::json!({"id": v.id, "name": v.name, "dns": v.dns}),
        ))
    }
}

#[utoipa::path(get, path = "/rest/locations/{id}", tag = "locations", params(("id" = i64, Path, description = "A location id", minimum = 1)), responses((status = 200, body = LocationView, description = "The location"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn get(
    Caller(_c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let id = int_id(&id)?;
    let v = blocking(&st, move |ctx| svc::get(ctx, id)).await?;
    Ok(HttpResponse::Ok().json(linked(st.base_url(), v, q.links())))
}

#[utoipa::path(delete, path = "/rest/locations/{id}", tag = "locations", params(("id" = i64, Path, description = "A location id", minimum = 1)), responses((status = 204, description = "Deleted"), (status = 403, description = "`ERR_ACCESS_SYSTEM_ADMIN`, or `ERR_ACCESS_USER` for the default location"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn delete(
    SystemAdmin(c): SystemAdmin,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let id = int_id(&id)?;
    blocking(&st, move |ctx| svc::delete(ctx, &c, id)).await?;
    Ok(HttpResponse::NoContent().finish())
}
