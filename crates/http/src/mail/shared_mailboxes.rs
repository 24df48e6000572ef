//! `/rest/sharedMailboxes*` (a member's side: the list, turning mailboxes on and off, the mail
//! policy) and `/rest/admin/sharedMailboxes*` (converting accounts, members, dissolving).
//!
//! Member calls take [`InternalCaller`] (internal accounts only); administrator calls take
//! [`AnyAdmin`] (system, application or helpdesk administrators). The rank rules between
//! administrators are the service's (`coffer_service::mail::shared_mailboxes`).

use crate::plumbing::body::Body;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{AnyAdmin, InternalCaller, QueryPairs};
use crate::plumbing::respond::{created, listing, Envelope};
use crate::plumbing::schema::{
    SharedMailboxPatchBody, SharedMailboxPostBody, SharedMailboxStatusBody,
};
use crate::plumbing::state::{blocking, AppState};
use actix_web::http::StatusCode;
use actix_web::web::{self, Data, Path};
use actix_web::HttpResponse;
use coffer_domain::list::{self, Dir, FieldSpec, Kind, ListSpec, Op};
use coffer_errors::{ApiError, ErrorCode};
use coffer_service::identity::users::DeleteOptions;
use coffer_service::mail::shared_mailboxes::{
    self as svc, ConvertInput, SharedMailboxSettingView, SharedMailboxView, StatusChange,
};

/// The filters and orders of both lists (`id` and `id:in` take mailbox ids, the mailbox
/// accounts' user ids).
pub const LIST: ListSpec = ListSpec {
    filters: &[
        FieldSpec {
            name: "active",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "id",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::In],
        },
    ],
    order_fields: &["modified", "active"],
    default_order: ("modified", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: &[],
    extra_params: &[],
    bulk: false,
};

/// `DELETE /rest/admin/sharedMailboxes`: the mailboxes as `id:in` (all or nothing).
pub const DELETE: ListSpec = ListSpec {
    extra_params: &["id:in"],
    ..ListSpec::PLAIN
};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/sharedMailboxes")
            .route(web::get().to(list))
            .route(web::patch().to(set_status)),
    )
    .service(web::resource("/sharedMailboxes/{id}/settings").route(web::get().to(settings)))
    .service(web::resource("/sharedMailboxes/mail/actions/counters").route(web::get().to(counters)))
    .service(
        web::resource("/admin/sharedMailboxes")
            .route(web::get().to(admin_list))
            .route(web::post().to(convert))
            .route(web::delete().to(dissolve)),
    )
    .service(web::resource("/admin/sharedMailboxes/{id}").route(web::patch().to(replace_members)));
}

/// The members of a body (`memberIds`): user ids, each trimmed; an item that is not one line of
/// text answers 422 `ERR_INVALID_PARAMETER` naming the list.
fn member_ids<T>(
    body: Result<T, RestError>,
    ids: impl FnOnce(&T) -> &[String],
) -> Result<(T, Vec<String>), RestError> {
    let invalid = || {
        RestError(
            ApiError::field(ErrorCode::InvalidParameter, "memberIds")
                .with_message("The parameter is invalid (memberIds: every item is a user id)."),
        )
    };
    let body = body.map_err(|RestError(e)| {
        if e.code == ErrorCode::InputNotString && e.field.as_deref() == Some("memberIds") {
            invalid()
        } else {
            RestError(e)
        }
    })?;
    let members = ids(&body)
        .iter()
        .map(|s| {
            if coffer_domain::input::is_clean(s, false) && !s.trim().is_empty() {
                Ok(s.trim().to_string())
            } else {
                Err(invalid())
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((body, members))
}

#[utoipa::path(get, path = "/rest/sharedMailboxes", tag = "sharedMailboxes", responses((status = 200, body = crate::plumbing::schema::WithMetadata<SharedMailboxView>, description = "The shared mailboxes the caller is a member of; `active` is the caller's own flag (default order `modified:asc`: when the membership or its flag last changed)"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`: an unknown filter or order"), (status = 403, description = "`ERR_NOT_INTERNAL_DOMAIN`: the caller's account is not internal; `ERR_ACCESS_USER`: outside the token's scope")), security(("bearer" = [])))]
pub async fn list(
    InternalCaller(c): InternalCaller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &LIST)?;
    let l = blocking(&st, move |ctx| svc::list(ctx, &c, &q)).await?;
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(patch, path = "/rest/sharedMailboxes", tag = "sharedMailboxes", request_body(content = SharedMailboxStatusBody), responses((status = 200, body = crate::plumbing::schema::WithMetadata<SharedMailboxView>, description = "Applied, all or nothing (turning off before turning on, so one call can swap mailboxes at the limit); the caller's list, first page"), (status = 403, description = "`ERR_ACCESS_USER`: an id names no mailbox the caller is a member of (`failedIds`), or outside the token's scope; `ERR_NOT_INTERNAL_DOMAIN`: the caller's account is not internal"), (status = 422, description = "`ERR_MAX_ACTIVED_SHAREDMAILBOX`: more active mailboxes than the setting `sharedMailboxMaxActive` allows; `ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_ARRAY`, `ERR_INPUT_NOT_STRING`, `ERR_INPUT_NOT_BOOLEAN`, `ERR_INVALID_PARAMETER` naming the field")), security(("bearer" = [])))]
pub async fn set_status(
    InternalCaller(c): InternalCaller,
    st: Data<AppState>,
    Body(body): Body<SharedMailboxStatusBody>,
) -> Result<HttpResponse, RestError> {
    // An item that is not an object is no change.
    let body = body.map_err(|RestError(e)| match e.field.as_deref() {
        Some(f)
            if e.code == ErrorCode::InputInvalidFormat
                && f.starts_with("data[")
                && !f.contains('.') =>
        {
            RestError(ApiError::field(ErrorCode::InvalidParameter, "data"))
        }
        _ => RestError(e),
    })?;
    if body.data.is_empty() || body.data.len() > svc::MAX_MEMBERS {
        return Err(RestError(
            ApiError::field(ErrorCode::InputRequired, "data").with_message(format!(
                "The field is required (data: 1 to {} changes).",
                svc::MAX_MEMBERS
            )),
        ));
    }
    let changes: Vec<StatusChange> = body
        .data
        .into_iter()
        .map(|item| StatusChange {
            id: item.id.trim().to_string(),
            active: item.active,
        })
        .collect();
    let first = list::parse(&[], &LIST)?;
    let l = blocking(&st, move |ctx| svc::set_status(ctx, &c, &changes, &first)).await?;
    Ok(listing(Envelope::Metadata, &l))
}

/// `GET /rest/sharedMailboxes/mail/actions/counters`: `id:in` narrows the mailboxes.
pub const COUNTERS: ListSpec = ListSpec {
    bulk: true,
    ..ListSpec::PLAIN
};

#[utoipa::path(get, path = "/rest/sharedMailboxes/mail/actions/counters", tag = "sharedMailboxes", responses((status = 200, body = coffer_service::mail::MailCountersList, description = "The mail counters of each shared mailbox the caller has active (`id:in` narrows them; an id the caller has not active is left out)"), (status = 403, description = "`ERR_NOT_INTERNAL_DOMAIN`: the caller's account is not internal; `ERR_ACCESS_USER`: outside the token's scope")), security(("bearer" = [])))]
pub async fn counters(
    InternalCaller(c): InternalCaller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &COUNTERS)?;
    let ids = q.id_in.clone();
    let v = blocking(&st, move |ctx| {
        coffer_service::mail::shared_counters(ctx, c.user_id(), ids.as_deref())
    })
    .await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(get, path = "/rest/sharedMailboxes/{id}/settings", tag = "sharedMailboxes", params(("id" = String, Path, description = "A shared mailbox id (the mailbox account's user id)")), responses((status = 200, body = SharedMailboxSettingView, description = "The mail policy for mail sent from the mailbox"), (status = 403, description = "`ERR_ACCESS_USER`: the caller does not have the mailbox active (or is no member); `ERR_NOT_INTERNAL_DOMAIN`: the caller's account is not internal"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: the id is not a user id")), security(("bearer" = [])))]
pub async fn settings(
    InternalCaller(c): InternalCaller,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| svc::mailbox_settings(ctx, &c, &id)).await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(get, path = "/rest/admin/sharedMailboxes", tag = "sharedMailboxes", responses((status = 200, body = crate::plumbing::schema::WithMetadata<SharedMailboxView>, description = "Every shared mailbox; `active` when any member has it active (default order `modified:asc`: the mailbox's last change)"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`: an unknown filter or order"), (status = 403, description = "`ERR_ACCESS_ADMIN`: not an administrator")), security(("bearer" = [])))]
pub async fn admin_list(
    AnyAdmin(a): AnyAdmin,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &LIST)?;
    let l = blocking(&st, move |ctx| svc::admin_list(ctx, &a, &q)).await?;
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(post, path = "/rest/admin/sharedMailboxes", tag = "sharedMailboxes", request_body(content = SharedMailboxPostBody), responses((status = 201, body = SharedMailboxView, description = "The account is a shared mailbox (it can no longer sign in), with `Location`"), (status = 403, description = "`ERR_ACCESS_ADMIN`: not an administrator; `ERR_ACCESS_USER`: the caller's own account; `ERR_ADMIN_ROLE_RANK_RESTRICTED`: only a system administrator converts an administrator's account; `ERR_NOT_INTERNAL_DOMAIN`: the account is not internal"), (status = 409, description = "`ERR_ENTITY_EXISTS`: the account is a shared mailbox already"), (status = 422, description = "`ERR_INVALID_PARAMETER` (userId: no active account; memberIds: an item that is not an id), `ERR_USER_IS_NOT_INTERNAL_DL_OR_INTERNAL_ACCOUNT` (memberIds, with `failedIds`), `ERR_CANNOT_RETAIN_DATA_TO_THE_SAME_USER`, `ERR_CANNOT_RETAIN_DATA_TO_UNVERIFIED_USER`, `ERR_INPUT_REQUIRED`, `ERR_INPUT_ATTRIBUTE_FORBIDDEN` (the delete options, as for DELETE /rest/users), a field of the wrong type")), security(("bearer" = [])))]
pub async fn convert(
    AnyAdmin(c): AnyAdmin,
    st: Data<AppState>,
    Body(body): Body<SharedMailboxPostBody>,
) -> Result<HttpResponse, RestError> {
    let (body, member_ids) = member_ids(body, |b| &b.member_ids)?;
    let user_id = body.user_id.trim().to_string();
    let opts = DeleteOptions {
        remote_wipe: body.remote_wipe.unwrap_or(false),
        retain_permission_to_shared_data: body.retain_permission_to_shared_data.unwrap_or(false),
        retain_to_user: body.retain_to_user.map(|s| s.trim().to_string()),
        retain_to_advanced_form_user: body
            .retain_to_advanced_form_user
            .map(|s| s.trim().to_string()),
        ..Default::default()
    };
    let options = DeleteOptions::check(body.delete_unshared_data, body.retain_data, opts)?;
    let input = ConvertInput {
        user_id,
        member_ids,
        options,
    };
    let v = blocking(&st, move |ctx| svc::convert(ctx, &c, &input)).await?;
    let location = format!("{}/rest/admin/sharedMailboxes/{}", st.base_url(), v.id);
    Ok(created(StatusCode::CREATED, location, &v))
}

#[utoipa::path(delete, path = "/rest/admin/sharedMailboxes", tag = "sharedMailboxes", params(("id:in" = String, Query, description = "Comma-separated shared mailbox ids, 1 to 1000", pattern = "[^,()\\s]")), responses((status = 204, description = "Dissolved, all or nothing: each account is a normal account again, without a password"), (status = 403, description = "`ERR_ACCESS_ADMIN`: not an administrator; `ERR_ADMIN_ROLE_RANK_RESTRICTED`: only a system administrator dissolves an administrator's account"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: an id names no shared mailbox (`failedIds`)"), (status = 422, description = "`ERR_INPUT_REQUIRED` (id:in), `ERR_INVALID_PARAMETER` (more than 1000 ids)")), security(("bearer" = [])))]
pub async fn dissolve(
    AnyAdmin(c): AnyAdmin,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &DELETE)?;
    let ids = q.extra("id:in").map(list::split_list).unwrap_or_default();
    if ids.is_empty() {
        return Err(RestError(ApiError::field(
            ErrorCode::InputRequired,
            "id:in",
        )));
    }
    if ids.len() > 1000 {
        return Err(RestError(
            ApiError::field(ErrorCode::InvalidParameter, "id:in")
                .with_message("The parameter is invalid (id:in takes at most 1000 ids)."),
        ));
    }
    blocking(&st, move |ctx| svc::dissolve(ctx, &c, &ids)).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(patch, path = "/rest/admin/sharedMailboxes/{id}", tag = "sharedMailboxes", params(("id" = String, Path, description = "A shared mailbox id (the mailbox account's user id)")), request_body(content = SharedMailboxPatchBody), responses((status = 200, body = SharedMailboxView, description = "The members are the ones given: kept ones keep their flag, new ones start inactive, removed ones lose access at once"), (status = 403, description = "`ERR_ACCESS_ADMIN`: not an administrator; `ERR_ADMIN_ROLE_RANK_RESTRICTED`: only a system administrator changes an administrator's account"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no shared mailbox has this id"), (status = 422, description = "`ERR_USER_IS_NOT_INTERNAL_DL_OR_INTERNAL_ACCOUNT` (memberIds, with `failedIds`), `ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_ARRAY`, `ERR_INVALID_PARAMETER` (memberIds)")), security(("bearer" = [])))]
pub async fn replace_members(
    AnyAdmin(c): AnyAdmin,
    st: Data<AppState>,
    id: Path<String>,
    Body(body): Body<SharedMailboxPatchBody>,
) -> Result<HttpResponse, RestError> {
    let (_, member_ids) = member_ids(body, |b| &b.member_ids)?;
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| {
        svc::replace_members(ctx, &c, &id, &member_ids)
    })
    .await?;
    Ok(HttpResponse::Ok().json(v))
}
