//! `/rest/contacts`: each user's own contacts.

use crate::plumbing::body::Declared;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{int_id, Caller, QueryPairs};
use crate::plumbing::respond::{created, linked, linked_page, listing, Envelope, Linked};
use crate::plumbing::state::{blocking, AppState};
use actix_web::http::StatusCode;
use actix_web::web::{self, Data, Path};
use actix_web::HttpResponse;
use coffer_domain::contact::parse_contact;
use coffer_domain::list::{self, Dir, FieldSpec, Kind, ListSpec, Op};
use coffer_service::mail::contacts::{self as svc, ContactView};

pub const LIST: ListSpec = ListSpec {
    filters: &[FieldSpec {
        name: "name",
        kind: Kind::Text,
        ops: &[Op::Eq, Op::Contains],
    }],
    order_fields: &["id", "name", "lastContactDate"],
    default_order: ("name", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: &[],
    extra_params: &[],
    bulk: false,
};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/contacts")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(
        web::resource("/contacts/{id}")
            .route(web::get().to(get))
            .route(web::put().to(update))
            .route(web::delete().to(delete)),
    );
}

impl Linked for ContactView {
    const COLLECTION: &'static str = "contacts";

    fn link_id(&self) -> String {
        self.id.to_string()
    }

    fn set_links(&mut self, links: Vec<coffer_service::platform::views::Link>) {
        self.links = Some(links);
    }
}

#[utoipa::path(get, path = "/rest/contacts", tag = "contacts", responses((status = 200, body = crate::plumbing::schema::WithMetadata<ContactView>, description = "The caller's contacts (default order `name:asc`; never contacted counts as the oldest)"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`: an unknown filter or order")), security(("bearer" = [])))]
pub async fn list(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &LIST)?;
    let on = q.links();
    let l = blocking(&st, move |ctx| svc::list(ctx, c.user_id(), &q)).await?;
    let l = linked_page(st.base_url(), l, on);
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(post, path = "/rest/contacts", tag = "contacts", request_body(content = crate::plumbing::schema::ContactBody), responses((status = 200, body = ContactView, description = "The new contact, with `Location`"), (status = 409, description = "`ERR_ENTITY_EXISTS`: the caller has a contact with this name (without regard to case)"), (status = 422, description = "`ERR_INVALID_PARAMETER` naming the field: `name`, `items` or `items[i].email`")), security(("bearer" = [])))]
pub async fn create(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Declared(body, _): Declared<crate::plumbing::schema::ContactBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let input = parse_contact(&body)?;
    let on = input.add_links || q.links();
    let v = blocking(&st, move |ctx| svc::create(ctx, c.user_id(), &input)).await?;
    let location = format!("{}/rest/contacts/{}", st.base_url(), v.id);
    Ok(created(
        StatusCode::OK,
        location,
        &linked(st.base_url(), v, on),
    ))
}

#[utoipa::path(get, path = "/rest/contacts/{id}", tag = "contacts", params(("id" = i64, Path, description = "A contact id", minimum = 1)), responses((status = 200, body = ContactView, description = "The contact"), (status = 403, description = "`ERR_ACCESS_USER`: another user's contact"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn get(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let id = int_id(&id)?;
    let v = blocking(&st, move |ctx| svc::get(ctx, c.user_id(), id)).await?;
    Ok(HttpResponse::Ok().json(linked(st.base_url(), v, q.links())))
}

#[utoipa::path(put, path = "/rest/contacts/{id}", tag = "contacts", params(("id" = i64, Path, description = "A contact id", minimum = 1)), request_body(content = crate::plumbing::schema::ContactBody), responses((status = 200, description = "Changed (no body)"), (status = 403, description = "`ERR_ACCESS_USER`: another user's contact"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 409, description = "`ERR_ENTITY_EXISTS`: another contact of the caller has this name"), (status = 422, description = "`ERR_INVALID_PARAMETER` naming the field")), security(("bearer" = [])))]
pub async fn update(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    Declared(body, _): Declared<crate::plumbing::schema::ContactBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let id = int_id(&id)?;
    let input = parse_contact(&body)?;
    blocking(&st, move |ctx| svc::update(ctx, c.user_id(), id, &input)).await?;
    Ok(HttpResponse::Ok().finish())
}

#[utoipa::path(delete, path = "/rest/contacts/{id}", tag = "contacts", params(("id" = i64, Path, description = "A contact id", minimum = 1)), responses((status = 200, description = "Deleted (no body)"), (status = 403, description = "`ERR_ACCESS_USER`: another user's contact"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn delete(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let id = int_id(&id)?;
    blocking(&st, move |ctx| svc::delete(ctx, c.user_id(), id)).await?;
    Ok(HttpResponse::Ok().finish())
}
