//! `/rest/clients`: the OAuth client registry (system and application administrators; keys and
//! impersonation flows system administrators only), and `/rest/clients/me` for any caller.

use crate::plumbing::body::Body;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{AppAdmin, Caller, QueryPairs};
use crate::plumbing::respond::{created, linked, linked_page, listing, Envelope, Linked};
use crate::plumbing::schema::ClientBody;
use crate::plumbing::state::{blocking, AppState};
use actix_web::http::StatusCode;
use actix_web::web::{self, Data, Path};
use actix_web::HttpResponse;
use coffer_domain::list::{self, Dir, FieldSpec, Kind, ListSpec, Op};
use coffer_service::identity::clients::{self as svc, ClientInput, Registrar};
use coffer_service::platform::views::ClientView;

pub const LIST: ListSpec = ListSpec {
    filters: &[
        FieldSpec {
            name: "name",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::Contains],
        },
        FieldSpec {
            name: "description",
            kind: Kind::Text,
            ops: &[Op::Contains],
        },
    ],
    order_fields: &["client_id", "name"],
    default_order: ("name", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: &[],
    extra_params: &[],
    bulk: false,
};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/clients")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(web::resource("/clients/me").route(web::get().to(me)))
    .service(web::resource("/clients/{id}/scopes").route(web::get().to(scopes)))
    .service(
        web::resource("/clients/{id}")
            .route(web::get().to(get))
            .route(web::put().to(update))
            .route(web::delete().to(delete)),
    );
}

impl Linked for ClientView {
    const COLLECTION: &'static str = "clients";

    fn link_id(&self) -> String {
        self.id.clone()
    }

    fn set_links(&mut self, links: Vec<coffer_service::platform::views::Link>) {
        self.links = Some(links);
    }
}

/// The service's input from a create or update body (the same fields for both).
fn input(b: ClientBody) -> (ClientInput, bool) {
    let input = ClientInput {
        name: b.name,
        description: b.description,
        redirect_uri: b.redirect_uri,
        scope: b.scope,
        // The masked key a client read back is no new key.
        signature_key: b
            .signature_key
            .filter(|k| k != coffer_service::platform::views::MASKED_SIGNATURE_KEY),
        jwt_public_key: b.jwt_public_key,
        access_token_lifetime: b.access_token_lifetime,
        refresh_token_lifetime: b.refresh_token_lifetime,
        flow: b.flow,
        flag: b.flag,
    };
    (input, b.add_links.unwrap_or(false))
}

#[utoipa::path(get, path = "/rest/clients", tag = "clients", responses((status = 200, body = crate::plumbing::schema::Paged<ClientView>, description = "The clients; hidden clients are left out"), (status = 403, description = "`ERR_ACCESS_USER`: not a system or application administrator")), security(("bearer" = [])))]
pub async fn list(
    AppAdmin(a): AppAdmin,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &LIST)?;
    let on = q.links();
    let l = blocking(&st, move |ctx| svc::list(ctx, &a, &q)).await?;
    let l = linked_page(st.base_url(), l, on);
    Ok(listing(Envelope::Paged, &l))
}

#[utoipa::path(post, path = "/rest/clients", tag = "clients", request_body(content = crate::plumbing::schema::ClientBody), responses((status = 200, body = ClientView, description = "The new client with `client_secret`, shown only here, and `Location`"), (status = 403, description = "`ERR_ACCESS_USER`: not a system or application administrator; `ERR_ACCESS_SYSTEM_ADMIN`: `signatureKey`, `jwtPublicKey` or the signature or JWT flow from an application administrator"), (status = 409, description = "`ERR_ENTITY_EXISTS`: the name is taken"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_STRING`, `ERR_INPUT_NOT_INTEGER`, `ERR_INPUT_MIN_VALUE`, `ERR_INPUT_INVALID_FORMAT`")), security(("bearer" = [])))]
pub async fn create(
    AppAdmin(c): AppAdmin,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<ClientBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let (input, add_links) = input(body);
    let v = blocking(&st, move |ctx| {
        svc::create(ctx, input, Registrar::Admin(&c))
    })
    .await?;
    let location = format!("{}/rest/clients/{}", st.base_url(), v.id);
    Ok(created(
        StatusCode::OK,
        location,
        &linked(st.base_url(), v, add_links || q.links()),
    ))
}

#[utoipa::path(get, path = "/rest/clients/me", tag = "clients", responses((status = 200, body = ClientView, description = "The client of the caller's token")), security(("bearer" = [])))]
pub async fn me(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let v = blocking(&st, move |ctx| svc::me(ctx, &c)).await?;
    Ok(HttpResponse::Ok().json(linked(st.base_url(), v, q.links())))
}

#[utoipa::path(get, path = "/rest/clients/{id}", tag = "clients", params(("id" = String, Path, description = "A client id")), responses((status = 200, body = ClientView, description = "The client"), (status = 403, description = "`ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn get(
    AppAdmin(a): AppAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| svc::get(ctx, &a, &id)).await?;
    Ok(HttpResponse::Ok().json(linked(st.base_url(), v, q.links())))
}

#[utoipa::path(put, path = "/rest/clients/{id}", tag = "clients", params(("id" = String, Path, description = "A client id")), request_body(content = crate::plumbing::schema::ClientBody, description = "As create; a built-in client changes only its two lifetimes"), responses((status = 200, body = ClientView, description = "The updated client"), (status = 403, description = "`ERR_ACCESS_USER`: not an administrator, or a change of a built-in client other than its lifetimes; `ERR_ACCESS_SYSTEM_ADMIN`: a new `signatureKey` or `jwtPublicKey`, or the signature or JWT flow added, by an application administrator"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 409, description = "`ERR_ENTITY_EXISTS`: the name is taken"), (status = 422, description = "As create")), security(("bearer" = [])))]
pub async fn update(
    AppAdmin(c): AppAdmin,
    st: Data<AppState>,
    id: Path<String>,
    Body(body): Body<ClientBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let (input, add_links) = input(body);
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| {
        svc::update(ctx, &id, input, Registrar::Admin(&c))
    })
    .await?;
    Ok(HttpResponse::Ok().json(linked(st.base_url(), v, add_links)))
}

#[utoipa::path(delete, path = "/rest/clients/{id}", tag = "clients", params(("id" = String, Path, description = "A client id")), responses((status = 204, description = "Deleted; its tokens stop working"), (status = 403, description = "Not an administrator, or a built-in client"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn delete(
    AppAdmin(c): AppAdmin,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let id = id.into_inner();
    blocking(&st, move |ctx| svc::delete(ctx, &c, &id)).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(get, path = "/rest/clients/{id}/scopes", tag = "clients", params(("id" = String, Path, description = "A client id")), responses((status = 200, body = crate::plumbing::schema::DataOf<String>, description = "The items of the client's scope"), (status = 403, description = "`ERR_ACCESS_USER`: another client needs an administrator"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn scopes(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let items = blocking(&st, move |ctx| svc::scopes(ctx, &c, &id)).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "data": items })))
}
