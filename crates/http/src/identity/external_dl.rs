//! `/rest/externalDL` (the organisation's external distribution lists: every user reads them,
//! user administrators keep them) and `/rest/users/actions/getDistributionList` (which of some
//! addresses are distribution lists).

use crate::plumbing::body::Body;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{Caller, QueryPairs, UserAdmin};
use crate::plumbing::respond::{created, listing, Envelope};
use crate::plumbing::schema::EmailsBody;
use crate::plumbing::state::{blocking, AppState};
use actix_web::http::StatusCode;
use actix_web::web::{self, Data};
use actix_web::HttpResponse;
use coffer_domain::contact::parse_email_list;
use coffer_domain::list::{self, Dir, FieldSpec, Kind, ListSpec, Op};
use coffer_errors::{ApiError, ErrorCode};
use coffer_service::identity::external_dls as svc;

pub const LIST: ListSpec = ListSpec {
    filters: &[],
    order_fields: &["email"],
    default_order: ("email", Dir::Asc),
    default_limit: 1000,
    max_limit: 10_000,
    with_fields: &[],
    extra_params: &["search"],
    bulk: false,
};

/// `getDistributionList`: the addresses as `email:in` (or one as `email`).
pub const CHECK: ListSpec = ListSpec {
    filters: &[FieldSpec {
        name: "email",
        kind: Kind::Text,
        ops: &[Op::Eq, Op::In],
    }],
    ..ListSpec::PLAIN
};

/// The most addresses one check takes.
const MAX_CHECKED: usize = 1000;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/externalDL")
            .route(web::get().to(list))
            .route(web::post().to(add))
            .route(web::delete().to(remove)),
    )
    .service(web::resource("/users/actions/getDistributionList").route(web::get().to(check)));
}

#[utoipa::path(get, path = "/rest/externalDL", tag = "externalDL", params(("search" = Option<String>, Query, description = "Only addresses containing this text (without regard to case)")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<svc::ExternalDlView>, description = "The listed addresses, by address")), security(("bearer" = [])))]
pub async fn list(
    Caller(_c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &LIST)?;
    let search = q.extra("search").map(str::to_string);
    let l = blocking(&st, move |ctx| svc::list(ctx, search.as_deref(), &q)).await?;
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(post, path = "/rest/externalDL", tag = "externalDL", request_body(content = EmailsBody), responses((status = 201, body = crate::plumbing::schema::DataOf<svc::ExternalDlView>, description = "Every address given, all listed now (those listed already stay as they were), with `Location`"), (status = 403, description = "`ERR_ACCESS_DENIED` (with `redirectUrl`): not a system or helpdesk administrator"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_ARRAY`, `ERR_INPUT_INVALID_FORMAT` (`emails[i]` is not an address; more than 1000)")), security(("bearer" = [])))]
pub async fn add(
    UserAdmin(c): UserAdmin,
    st: Data<AppState>,
    Body(body): Body<EmailsBody>,
) -> Result<HttpResponse, RestError> {
    let emails = parse_email_list(&body?.emails)?;
    let data = blocking(&st, move |ctx| svc::add(ctx, &c, &emails)).await?;
    let location = format!("{}/rest/externalDL", st.base_url());
    Ok(created(
        StatusCode::CREATED,
        location,
        &serde_json::json!({ "data": data }),
    ))
}

#[utoipa::path(delete, path = "/rest/externalDL", tag = "externalDL", request_body(content = EmailsBody), responses((status = 200, body = crate::plumbing::schema::DataOf<svc::ExternalDlView>, description = "The addresses taken off the list (those that were not listed are left out)"), (status = 403, description = "`ERR_ACCESS_DENIED` (with `redirectUrl`): not a system or helpdesk administrator"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_ARRAY`, `ERR_INPUT_INVALID_FORMAT`")), security(("bearer" = [])))]
pub async fn remove(
    UserAdmin(c): UserAdmin,
    st: Data<AppState>,
    Body(body): Body<EmailsBody>,
) -> Result<HttpResponse, RestError> {
    let emails = parse_email_list(&body?.emails)?;
    let data = blocking(&st, move |ctx| svc::remove(ctx, &c, &emails)).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "data": data })))
}

#[utoipa::path(get, path = "/rest/users/actions/getDistributionList", tag = "users", params(("email:in" = String, Query, description = "Comma-separated addresses, 1 to 1000 (one address may also come as `email`)")), responses((status = 200, body = crate::plumbing::schema::DataOf<svc::DistributionListCheck>, description = "Each address (lower-cased, once) and whether it is an external distribution list"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`: an empty list, more than 1000 addresses, another parameter"), (status = 422, description = "`ERR_INPUT_REQUIRED`: no address; `ERR_INPUT_INVALID_FORMAT`: a value that is not an address")), security(("bearer" = [])))]
pub async fn check(
    Caller(_c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &CHECK)?;
    let emails: Vec<String> = q
        .filters
        .iter()
        .flat_map(|f| f.values.iter().filter_map(|v| v.as_text()))
        .filter(|v| !v.trim().is_empty())
        .map(str::to_string)
        .collect();
    if emails.is_empty() {
        return Err(RestError(ApiError::field(
            ErrorCode::InputRequired,
            "email:in",
        )));
    }
    // A value that is not an address is the client's mistake, not an unknown list.
    if let Some(f) = q.filters.iter().find(|f| {
        f.values
            .iter()
            .filter_map(|v| v.as_text())
            .any(|v| !v.trim().is_empty() && coffer_domain::Email::parse(v.trim()).is_err())
    }) {
        let field = if f.op == Op::In { "email:in" } else { "email" };
        return Err(RestError(ApiError::field(
            ErrorCode::InputInvalidFormat,
            field,
        )));
    }
    if emails.len() > MAX_CHECKED {
        return Err(RestError(
            ApiError::new(ErrorCode::RequestInvalidFilter)
                .with_message("The filter is invalid: at most 1000 addresses."),
        ));
    }
    let data = blocking(&st, move |ctx| svc::check(ctx, &emails)).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "data": data })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plumbing::body::parse;
    use coffer_errors::{ApiError, ErrorCode};
    use serde_json::{json, Value};

    fn emails(body: Value) -> Result<Vec<String>, ApiError> {
        parse_email_list(&parse::<EmailsBody>(body)?.emails)
    }

    #[test]
    fn email_lists() {
        assert_eq!(
            emails(json!({"emails": ["A@x.io", "a@x.io", "b@x.io"]})).unwrap(),
            ["a@x.io", "b@x.io"]
        );
        for (body, code, field) in [
            (json!({}), ErrorCode::InputRequired, "emails"),
            (json!({"emails": null}), ErrorCode::InputRequired, "emails"),
            (json!({"emails": []}), ErrorCode::InputRequired, "emails"),
            (
                json!({"emails": "a@x.io"}),
                ErrorCode::InputNotArray,
                "emails",
            ),
            (
                json!({"emails": ["a@x.io", "no"]}),
                ErrorCode::InputInvalidFormat,
                "emails[1]",
            ),
            (
                json!({"emails": [1]}),
                ErrorCode::InputInvalidFormat,
                "emails[0]",
            ),
            (
                json!({"emails": ["a@x.io", null]}),
                ErrorCode::InputInvalidFormat,
                "emails[1]",
            ),
            (
                json!({"emails": (0..1001).map(|i| format!("u{i}@x.io")).collect::<Vec<_>>()}),
                ErrorCode::InputInvalidFormat,
                "emails",
            ),
            (
                json!({"emails": ["a@x.io"], "email": "b@x.io"}),
                ErrorCode::InputAttributeForbidden,
                "email",
            ),
        ] {
            let e = emails(body.clone()).unwrap_err();
            assert_eq!((e.code, e.field.as_deref()), (code, Some(field)), "{body}");
        }
    }
}
