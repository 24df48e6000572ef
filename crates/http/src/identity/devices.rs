//! `/rest/devices` and `/rest/users/{id}/devices`.

use crate::plumbing::body::Body;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{int_id, Caller, QueryPairs};
use crate::plumbing::respond::{created, linked, linked_page, listing, Envelope, Linked};
use crate::plumbing::schema::{DeviceCreateBody, DeviceUpdateBody};
use crate::plumbing::state::{blocking, AppState};
use actix_web::http::StatusCode;
use actix_web::web::{self, Data, Path};
use actix_web::HttpResponse;
use coffer_domain::list::{self, Dir, FieldSpec, Kind, ListSpec, Op};
use coffer_service::identity::devices::{self as svc, DeviceInput};
use coffer_service::platform::views::DeviceView;

pub const LIST: ListSpec = ListSpec {
    filters: &[
        FieldSpec {
            name: "installTagId",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::Contains],
        },
        FieldSpec {
            name: "userId",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::In],
        },
        FieldSpec {
            name: "clientId",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::Contains],
        },
    ],
    order_fields: &["id", "installTagId", "userId", "clientId"],
    default_order: ("id", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: &[],
    extra_params: &[],
    bulk: false,
};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/devices")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(web::resource("/devices/me/actions/wipe").route(web::patch().to(complete_wipe)))
    .service(web::resource("/devices/me/actions/logout").route(web::delete().to(logout)))
    .service(web::resource("/devices/{id}/actions/wipe").route(web::post().to(request_wipe)))
    .service(web::resource("/devices/{install_tag_id}/wipe").route(web::get().to(wipe_status)))
    .service(
        web::resource("/devices/{id}")
            .route(web::get().to(get))
            .route(web::put().to(update))
            .route(web::delete().to(delete)),
    )
    .service(web::resource("/users/{id}/devices").route(web::get().to(user_devices)));
}

impl Linked for DeviceView {
    const COLLECTION: &'static str = "devices";

    fn link_id(&self) -> String {
        self.id.to_string()
    }

    fn set_links(&mut self, links: Vec<coffer_service::platform::views::Link>) {
        self.links = Some(links);
    }
}

#[utoipa::path(get, path = "/rest/devices", tag = "devices", responses((status = 200, body = crate::plumbing::schema::Paged<DeviceView>, description = "The caller's devices; an administrator's: every device")), security(("bearer" = [])))]
pub async fn list(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &LIST)?;
    let on = q.links();
    let l = blocking(&st, move |ctx| svc::list(ctx, &c, &q)).await?;
    let l = linked_page(st.base_url(), l, on);
    Ok(listing(Envelope::Paged, &l))
}

#[utoipa::path(get, path = "/rest/users/{id}/devices", tag = "devices", params(("id" = String, Path, description = "A user id")), responses((status = 200, body = crate::plumbing::schema::Paged<DeviceView>, description = "The user's devices"), (status = 403, description = "`ERR_ACCESS_USER`: another user's devices need an administrator"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such user")), security(("bearer" = [])))]
pub async fn user_devices(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &LIST)?;
    let on = q.links();
    let id = id.into_inner();
    let l = blocking(&st, move |ctx| svc::list_for_user(ctx, &c, &id, &q)).await?;
    let l = linked_page(st.base_url(), l, on);
    Ok(listing(Envelope::Paged, &l))
}

#[utoipa::path(post, path = "/rest/devices", tag = "devices", request_body(content = crate::plumbing::schema::DeviceCreateBody), responses((status = 200, body = DeviceView, description = "The new device, with `Location`"), (status = 403, description = "`ERR_ACCESS_USER`: another user or client needs an administrator"), (status = 409, description = "`ERR_ENTITY_EXISTS`: the user has this install tag on this client"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_INVALID_FORMAT`, `ERR_INVALID_PARAMETER` (userId or clientId unknown)")), security(("bearer" = [])))]
pub async fn create(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<DeviceCreateBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let input = DeviceInput {
        client_id: body.client_id,
        user_id: body.user_id,
        install_tag_id: Some(body.install_tag_id),
        install_name: body.install_name,
        mobile_key_store: body.mobile_key_store,
    };
    let on = body.add_links.unwrap_or(false) || q.links();
    let d = blocking(&st, move |ctx| svc::create(ctx, &c, input)).await?;
    let location = format!("{}/rest/devices/{}", st.base_url(), d.id);
    Ok(created(
        StatusCode::OK,
        location,
        &linked(st.base_url(), d, on),
    ))
}

#[utoipa::path(get, path = "/rest/devices/{id}", tag = "devices", params(("id" = i64, Path, description = "A device id", minimum = 1)), responses((status = 200, body = DeviceView, description = "The device"), (status = 403, description = "`ERR_ACCESS_USER`: another user's device"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn get(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let id = int_id(&id)?;
    let d = blocking(&st, move |ctx| svc::get(ctx, &c, id)).await?;
    Ok(HttpResponse::Ok().json(linked(st.base_url(), d, q.links())))
}

#[utoipa::path(put, path = "/rest/devices/{id}", tag = "devices", params(("id" = i64, Path, description = "A device id", minimum = 1)), request_body(content = crate::plumbing::schema::DeviceUpdateBody, description = "`mobileKeyStore`, `registrationToken`, or both"), responses((status = 200, body = DeviceView, description = "The updated device"), (status = 403, description = "`ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "`ERR_INPUT_REQUIRED` (neither field), `ERR_INPUT_NOT_STRING`, `ERR_INPUT_INVALID_FORMAT`")), security(("bearer" = [])))]
pub async fn update(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    Body(body): Body<DeviceUpdateBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let id = int_id(&id)?;
    let on = body.add_links.unwrap_or(false);
    let (key, token) = (body.mobile_key_store, body.registration_token);
    let d = blocking(&st, move |ctx| svc::update(ctx, &c, id, key, token)).await?;
    Ok(HttpResponse::Ok().json(linked(st.base_url(), d, on)))
}

#[utoipa::path(delete, path = "/rest/devices/{id}", tag = "devices", params(("id" = i64, Path, description = "A device id", minimum = 1)), responses((status = 204, description = "Deleted; its tokens stop working"), (status = 403, description = "`ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn delete(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let id = int_id(&id)?;
    blocking(&st, move |ctx| svc::delete(ctx, &c, id)).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(get, path = "/rest/devices/{install_tag_id}/wipe", tag = "devices", params(("install_tag_id" = String, Path, description = "The install tag of one of the caller's devices")), responses((status = 200, body = crate::plumbing::schema::WipeStatus, description = "The wipe flag; reading a set flag (1) moves it to notified (2)"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn wipe_status(
    Caller(c): Caller,
    st: Data<AppState>,
    tag: Path<String>,
) -> Result<HttpResponse, RestError> {
    let tag = tag.into_inner();
    let status = blocking(&st, move |ctx| svc::read_wipe_flag(ctx, &c, &tag)).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "status": status })))
}

#[utoipa::path(patch, path = "/rest/devices/me/actions/wipe", tag = "devices", responses((status = 200, description = "The current device reported its wipe done (flag 3); no content"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: the token has no device")), security(("bearer" = [])))]
pub async fn complete_wipe(
    Caller(c): Caller,
    st: Data<AppState>,
) -> Result<HttpResponse, RestError> {
    blocking(&st, move |ctx| svc::complete_wipe(ctx, &c)).await?;
    Ok(HttpResponse::Ok().finish())
}

#[utoipa::path(post, path = "/rest/devices/{id}/actions/wipe", tag = "devices", params(("id" = i64, Path, description = "A device id", minimum = 1)), responses((status = 200, body = DeviceView, description = "Coffer: an administrator requests a remote wipe (flag 1)"), (status = 403, description = "`ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn request_wipe(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let id = int_id(&id)?;
    let d = blocking(&st, move |ctx| svc::request_wipe(ctx, &c, id)).await?;
    Ok(HttpResponse::Ok().json(d))
}

#[utoipa::path(delete, path = "/rest/devices/me/actions/logout", tag = "devices", responses((status = 200, body = crate::plumbing::schema::LogoutResponse, description = "Logged out: every token of the session stops working")), security(("bearer" = [])))]
pub async fn logout(Caller(c): Caller, st: Data<AppState>) -> Result<HttpResponse, RestError> {
    let url = blocking(&st, move |ctx| svc::logout(ctx, &c)).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "redirectUri": url })))
}
