//! `/rest/admin/users*` (account administration) and `/rest/users/{id}/settings`.
//!
//! Every `/rest/admin/users*` handler here takes [`AccountAdmin`]: system and helpdesk
//! administrators only; the rank rules between them are the service's
//! (`coffer_service::identity::admin_users`).

use crate::plumbing::body::Body;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{AccountAdmin, Caller, QueryPairs};
use crate::plumbing::respond::{created, linked, linked_page, listing, Envelope, Linked};
use crate::plumbing::schema::{
    AdminUserCreateBody, AdminUserUpdateBody, IdsBody, UserSettingsBody,
};
use crate::plumbing::state::{blocking, AppState};
use actix_web::http::StatusCode;
use actix_web::web::{self, Data, Path};
use actix_web::HttpResponse;
use coffer_domain::list::{self, Dir, FieldSpec, Kind, ListSpec, Op};
use coffer_errors::{ApiError, ErrorCode};
use coffer_service::identity::admin_users::{
    self as svc, AdminRoleView, AdminUserView, CreateInput, SettingsInput, UpdateInput,
    UserSettingsView,
};
use coffer_service::platform::views::{DeviceView, Link};

/// The filters and orders of `GET /rest/admin/users`.
pub const LIST: ListSpec = ListSpec {
    filters: &[
        FieldSpec {
            name: "email",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::Contains],
        },
        FieldSpec {
            name: "name",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::Contains],
        },
        FieldSpec {
            name: "active",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "deleted",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "userTypeId",
            kind: Kind::Int,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "suspended",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "verified",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "isRecipient",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "allowsCollaboration",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "created",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::Gt, Op::Gte, Op::Lt, Op::Lte],
        },
    ],
    order_fields: &["email", "name", "created"],
    default_order: ("email", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: &[],
    extra_params: &[],
    bulk: false,
};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/admin/users")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(
        web::resource("/admin/users/actions/deleteTotpSecret")
            .route(web::post().to(delete_totp_secret)),
    )
    .service(web::resource("/admin/users/{id}/devices").route(web::get().to(devices)))
    .service(web::resource("/admin/users/{id}/adminRoles").route(web::get().to(admin_roles)))
    .service(
        web::resource("/users/{id}/settings")
            .route(web::get().to(settings))
            .route(web::put().to(update_settings)),
    );
}

impl Linked for AdminUserView {
    const COLLECTION: &'static str = "admin/users";

    fn link_id(&self) -> String {
        self.id.clone()
    }

    fn set_links(&mut self, links: Vec<coffer_service::platform::views::Link>) {
        self.links = Some(links);
    }
}

/// The creation times the `created` filters allow: from (inclusive), until (exclusive). A bare
/// date is a whole day (UTC): `created=D` that day, `created:gt=D` from the next day on,
/// `created:lte=D` up to its end; a date with a time is that second.
fn created_range(q: &list::ListQuery) -> Result<(Option<i64>, Option<i64>), RestError> {
    let (mut from, mut until): (Option<i64>, Option<i64>) = (None, None);
    for f in q.filters.iter().filter(|f| f.field == "created") {
        let v = f.value().as_text().unwrap_or_default();
        let t = crate::content::parse_date("created", v)?;
        let span = if v.len() == 10 { 86_400 } else { 1 };
        let (low, high) = match f.op {
            Op::Gt => (Some(t + span), None),
            Op::Gte => (Some(t), None),
            Op::Lt => (None, Some(t)),
            Op::Lte => (None, Some(t + span)),
            _ => (Some(t), Some(t + span)),
        };
        // Several bounds narrow each other.
        if let Some(l) = low {
            from = Some(from.map_or(l, |x: i64| x.max(l)));
        }
        if let Some(h) = high {
            until = Some(until.map_or(h, |x: i64| x.min(h)));
        }
    }
    Ok((from, until))
}

#[utoipa::path(get, path = "/rest/admin/users", tag = "users", responses((status = 200, body = crate::plumbing::schema::WithMetadata<AdminUserView>, description = "The accounts (deleted ones only with `deleted=true`), by `email:asc` unless `orderBy` says otherwise. `suspended`: switched off and not deleted; `verified=false` lists none (every account is verified); `isRecipient`: accounts outside the organisation; `allowsCollaboration`: by the profile; `created` a day (UTC) or an RFC 3339 time, with `:gt`, `:gte`, `:lt`, `:lte`"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`: an unknown filter or order"), (status = 403, description = "`ERR_ACCESS_ADMIN`: not a system or helpdesk administrator"), (status = 422, description = "`ERR_INPUT_NOT_BOOLEAN`, `ERR_INPUT_INVALID_DATE`")), security(("bearer" = [])))]
pub async fn list(
    AccountAdmin(c): AccountAdmin,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &LIST)?;
    let created = created_range(&q)?;
    let on = q.links();
    let l = blocking(&st, move |ctx| svc::list(ctx, &c, &q, created)).await?;
    let l = linked_page(st.base_url(), l, on);
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(post, path = "/rest/admin/users", tag = "users", request_body(content = AdminUserCreateBody), responses((status = 200, body = AdminUserView, description = "The new account (with its system folders), with `Location`"), (status = 403, description = "`ERR_ACCESS_ADMIN`: not a system or helpdesk administrator; `ERR_ADMIN_ROLE_RANK_RESTRICTED`: a helpdesk administrator giving an administrator role; `ERR_INPUT_EMAIL_IS_DISTRIBUTION_LIST`: the address is an external distribution list"), (status = 409, description = "`ERR_ENTITY_EXISTS`: an account has this email"), (status = 422, description = "`ERR_INPUT_REQUIRED` (email), `ERR_INPUT_INVALID_FORMAT` (email, name), `ERR_INPUT_PASSWORD_COMPLEXITY_ERROR`, `ERR_INPUT_NOT_IN_LIST` (adminRoleId), `ERR_INVALID_PARAMETER` (userTypeId), `ERR_INPUT_ATTRIBUTE_FORBIDDEN` (verified false), a field of the wrong type")), security(("bearer" = [])))]
pub async fn create(
    AccountAdmin(c): AccountAdmin,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<AdminUserCreateBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    refuse_unverified(body.verified)?;
    let on = body.add_links.unwrap_or(false) || q.links();
    let input = CreateInput {
        email: body.email,
        name: body.name,
        password: body.password,
        user_type_id: body.user_type_id,
        admin_role_id: body.admin_role_id,
        send_notification: body.send_notification.unwrap_or(false),
    };
    let u = blocking(&st, move |ctx| svc::create(ctx, &c, input)).await?;
    let location = format!("{}/rest/admin/users/{}", st.base_url(), u.id);
    Ok(created(
        StatusCode::OK,
        location,
        &linked(st.base_url(), u, on),
    ))
}

/// Coffer keeps no unverified accounts: `verified` may only be true.
fn refuse_unverified(verified: Option<bool>) -> Result<(), RestError> {
    if verified == Some(false) {
        return Err(RestError(
            ApiError::field(ErrorCode::InputAttributeForbidden, "verified").with_message(
                "The attribute is forbidden (accounts an administrator makes are verified).",
            ),
        ));
    }
    Ok(())
}

#[utoipa::path(get, path = "/rest/admin/users/{id}", tag = "users", params(("id" = String, Path, description = "A user id")), responses((status = 200, body = AdminUserView, description = "The account (a deleted one too, with `deleted: true`)"), (status = 403, description = "`ERR_ACCESS_ADMIN`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn get(
    AccountAdmin(c): AccountAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let u = blocking(&st, move |ctx| svc::get(ctx, &c, &id)).await?;
    Ok(HttpResponse::Ok().json(linked(st.base_url(), u, q.links())))
}

#[utoipa::path(put, path = "/rest/admin/users/{id}", tag = "users", params(("id" = String, Path, description = "A user id")), request_body(content = Option<AdminUserUpdateBody>, description = "Only the fields to change; none changes nothing"), responses((status = 200, body = AdminUserView, description = "The updated account; deactivating it or setting its password ends its sessions"), (status = 403, description = "`ERR_ACCESS_ADMIN`; `ERR_ADMIN_ROLE_RANK_RESTRICTED` (a helpdesk administrator and an administrator's account or role); `ERR_ACCESS_USER` (deactivating oneself or changing one's own role); `ERR_ENTITY_DELETED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 409, description = "`ERR_ENTITY_EXISTS`: the account changed meanwhile"), (status = 422, description = "`ERR_INPUT_REQUIRED`/`ERR_INPUT_INVALID_FORMAT` (name), `ERR_INPUT_PASSWORD_COMPLEXITY_ERROR`, `ERR_INPUT_NOT_IN_LIST` (adminRoleId), `ERR_INVALID_PARAMETER` (userTypeId; `suspended` and `deactivated` differing), `ERR_INPUT_ATTRIBUTE_FORBIDDEN` (verified false), a field of the wrong type")), security(("bearer" = [])))]
pub async fn update(
    AccountAdmin(c): AccountAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<AdminUserUpdateBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let deactivated = match (body.deactivated, body.suspended) {
        (Some(d), Some(s)) if d != s => {
            return Err(RestError(
                ApiError::field(ErrorCode::InvalidParameter, "suspended").with_message(
                    "The parameter is invalid (suspended and deactivated are one switch; give the same value).",
                ),
            ))
        }
        (d, s) => d.or(s),
    };
    refuse_unverified(body.verified)?;
    let on = body.add_links.unwrap_or(false) || q.links();
    let input = UpdateInput {
        name: body.name,
        password: body.password,
        deactivated,
        user_type_id: body.user_type_id,
        admin_role_id: body.admin_role_id,
    };
    let id = id.into_inner();
    let u = blocking(&st, move |ctx| svc::update(ctx, &c, &id, input)).await?;
    Ok(HttpResponse::Ok().json(linked(st.base_url(), u, on)))
}

#[utoipa::path(get, path = "/rest/admin/users/{id}/devices", tag = "users", params(("id" = String, Path, description = "A user id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<DeviceView>, description = "The user's devices (the filters and order of `GET /rest/users/{id}/devices`) in the `{data, metadata}` envelope"), (status = 403, description = "`ERR_ACCESS_ADMIN`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn devices(
    AccountAdmin(c): AccountAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &crate::identity::devices::LIST)?;
    let on = q.links();
    let id = id.into_inner();
    let l = blocking(&st, move |ctx| svc::devices(ctx, &c, &id, &q)).await?;
    // The envelope of the admin calls, `{data, metadata}`, not the paged one of
    // `GET /rest/users/{id}/devices`.
    Ok(listing(
        Envelope::Metadata,
        &linked_page(st.base_url(), l, on),
    ))
}

#[utoipa::path(get, path = "/rest/admin/users/{id}/adminRoles", tag = "users", params(("id" = String, Path, description = "A user id")), responses((status = 200, body = crate::plumbing::schema::AdminRoles, description = "The administrator roles the account holds; none for a plain user"), (status = 403, description = "`ERR_ACCESS_ADMIN`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn admin_roles(
    AccountAdmin(c): AccountAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let roles: Vec<AdminRoleView> =
        blocking(&st, move |ctx| svc::admin_roles(ctx, &c, &id)).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "data": roles })))
}

#[utoipa::path(post, path = "/rest/admin/users/actions/deleteTotpSecret", tag = "users", request_body(content = IdsBody), responses((status = 200, description = "The TOTP secrets are deleted: the users enrol again at their next sign-in; their sessions ended"), (status = 403, description = "`ERR_ACCESS_ADMIN`; `ERR_ADMIN_ROLE_RANK_RESTRICTED` (a helpdesk administrator and an administrator's account); `ERR_ENTITY_DELETED` (`failedIds`)"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND` (`failedIds`)"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_ARRAY`, `ERR_INPUT_NOT_STRING`, `ERR_INVALID_PARAMETER` (more than 100 ids)")), security(("bearer" = [])))]
pub async fn delete_totp_secret(
    AccountAdmin(c): AccountAdmin,
    st: Data<AppState>,
    Body(body): Body<IdsBody>,
) -> Result<HttpResponse, RestError> {
    let ids = body?.ids;
    // An id is one line of text; anything else is no id.
    if !ids.iter().all(|s| coffer_domain::input::is_clean(s, false)) {
        return Err(RestError(ApiError::field(ErrorCode::InputNotString, "ids")));
    }
    blocking(&st, move |ctx| svc::delete_totp_secrets(ctx, &c, &ids)).await?;
    Ok(HttpResponse::Ok().finish())
}

fn settings_links(st: &AppState, id: &str, mut v: UserSettingsView, on: bool) -> UserSettingsView {
    if on {
        v.links = Some(vec![Link::new(
            "self",
            format!("{}/rest/users/{id}/settings", st.base_url()),
        )]);
    }
    v
}

#[utoipa::path(get, path = "/rest/users/{id}/settings", tag = "users", params(("id" = String, Path, description = "The caller's own user id")), responses((status = 200, body = UserSettingsView, description = "The user's settings"), (status = 403, description = "`ERR_ACCESS_USER`: another user's settings"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: not a user id")), security(("bearer" = [])))]
pub async fn settings(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let key = id.clone();
    let v = blocking(&st, move |ctx| svc::settings(ctx, &c, &key)).await?;
    Ok(HttpResponse::Ok().json(settings_links(&st, &id, v, q.links())))
}

#[utoipa::path(put, path = "/rest/users/{id}/settings", tag = "users", params(("id" = String, Path, description = "The caller's own user id")), request_body(content = Option<UserSettingsBody>, description = "Only the fields to change; none changes nothing"), responses((status = 200, body = UserSettingsView, description = "The updated settings"), (status = 403, description = "`ERR_ACCESS_USER`: another user's settings"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: not a user id"), (status = 422, description = "`ERR_INPUT_MIN_VALUE` (languageId), `ERR_INVALID_PARAMETER` (locationId unknown), `ERR_INPUT_INVALID_FORMAT` (too long, control characters), a field of the wrong type")), security(("bearer" = [])))]
pub async fn update_settings(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<UserSettingsBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let on = body.add_links.unwrap_or(false) || q.links();
    let input = SettingsInput {
        language_id: body.language_id,
        location_id: body.location_id,
        signature: body.signature,
        mobile_key_store: body.mobile_key_store,
    };
    let id = id.into_inner();
    let key = id.clone();
    let v = blocking(&st, move |ctx| svc::update_settings(ctx, &c, &key, input)).await?;
    Ok(HttpResponse::Ok().json(settings_links(&st, &id, v, on)))
}
