//! `/rest/contacts`: each user's own contacts.

use crate::plumbing::body::Body;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{int_id, Caller, QueryPairs};
use crate::plumbing::respond::{created, linked, linked_page, listing, Envelope, Linked};
use crate::plumbing::schema::ContactBody;
use crate::plumbing::state::{blocking, AppState};
use actix_web::http::StatusCode;
use actix_web::web::{self, Data, Path};
use actix_web::HttpResponse;
use coffer_domain::contact::{parse_contact, ContactInput};
use coffer_domain::list::{self, Dir, FieldSpec, Kind, ListSpec, Op};
use coffer_errors::{ApiError, ErrorCode};
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

/// A contact body checked: the contact calls answer every refused field with 422
/// `ERR_INVALID_PARAMETER` naming it (an item by its `email`), whatever the body's own check
/// found; a body that is not a JSON object or names an unknown field answers as elsewhere.
fn contact_input(body: Result<ContactBody, RestError>) -> Result<ContactInput, RestError> {
    let body = body.map_err(|RestError(e)| match (e.code, e.field.clone()) {
        (ErrorCode::RequestInvalidJson | ErrorCode::InputAttributeForbidden, _) | (_, None) => {
            RestError(e)
        }
        (_, Some(field)) => {
            // An item is named by its address.
            let field = if field.starts_with("items[") && !field.contains('.') {
                format!("{field}.email")
            } else {
                field
            };
            RestError(
                ApiError::field(ErrorCode::InvalidParameter, field.clone())
                    .with_message(format!("The parameter is invalid ({field}).")),
            )
        }
    })?;
    let emails: Vec<String> = body.items.into_iter().map(|i| i.email).collect();
    let input = parse_contact(&body.name, &emails, body.add_links.unwrap_or(false))?;
    Ok(input)
}

#[utoipa::path(post, path = "/rest/contacts", tag = "contacts", request_body(content = ContactBody), responses((status = 200, body = ContactView, description = "The new contact, with `Location`"), (status = 409, description = "`ERR_ENTITY_EXISTS`: the caller has a contact with this name (without regard to case)"), (status = 422, description = "`ERR_INVALID_PARAMETER` naming the field: `name`, `items` or `items[i].email`")), security(("bearer" = [])))]
pub async fn create(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<ContactBody>,
) -> Result<HttpResponse, RestError> {
    let input = contact_input(body)?;
    let q = list::parse(&q, &ListSpec::PLAIN)?;
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

#[utoipa::path(put, path = "/rest/contacts/{id}", tag = "contacts", params(("id" = i64, Path, description = "A contact id", minimum = 1)), request_body(content = ContactBody), responses((status = 200, description = "Changed (no body)"), (status = 403, description = "`ERR_ACCESS_USER`: another user's contact"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 409, description = "`ERR_ENTITY_EXISTS`: another contact of the caller has this name"), (status = 422, description = "`ERR_INVALID_PARAMETER` naming the field")), security(("bearer" = [])))]
pub async fn update(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    Body(body): Body<ContactBody>,
) -> Result<HttpResponse, RestError> {
    let input = contact_input(body)?;
    let id = int_id(&id)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plumbing::body::parse;
    use serde_json::{json, Value};

    fn input(body: Value) -> Result<ContactInput, ApiError> {
        contact_input(parse::<ContactBody>(body).map_err(RestError)).map_err(|RestError(e)| e)
    }

    #[test]
    fn every_bad_field_is_invalid_parameter_naming_it() {
        let ok = json!([{"email": "a@example.com"}]);
        for (body, field) in [
            (json!({"items": ok}), "name"),
            (json!({"name": null, "items": ok}), "name"),
            (json!({"name": "  ", "items": ok}), "name"),
            (json!({"name": 5, "items": ok}), "name"),
            (json!({"name": "a\u{0}b", "items": ok}), "name"),
            (json!({"name": "a\nb", "items": ok}), "name"),
            (json!({"name": "x".repeat(256), "items": ok}), "name"),
            (json!({"name": "ä".repeat(128), "items": ok}), "name"),
            (json!({"name": "n"}), "items"),
            (json!({"name": "n", "items": []}), "items"),
            (json!({"name": "n", "items": "a@example.com"}), "items"),
            (
                json!({"name": "n", "items": vec![json!({"email": "a@example.com"}); 101]}),
                "items",
            ),
            (
                json!({"name": "n", "items": ["a@example.com"]}),
                "items[0].email",
            ),
            (
                json!({"name": "n", "items": [{"mail": "a@example.com"}]}),
                "items[0].email",
            ),
            (
                json!({"name": "n", "items": [{"email": "a@example.com"}, {"email": "nope"}]}),
                "items[1].email",
            ),
            (
                json!({"name": "n", "items": [{"email": "a@example.com"}, {"email": 3}]}),
                "items[1].email",
            ),
            (
                json!({"name": "n", "items": [{"email": "a\u{7}@example.com"}]}),
                "items[0].email",
            ),
            (
                json!({"name": "n", "items": [{"email": 3}]}),
                "items[0].email",
            ),
            (
                json!({"name": "n", "items": ok, "addLinks": {}}),
                "addLinks",
            ),
        ] {
            let e = input(body.clone()).unwrap_err();
            assert_eq!(
                (e.code, e.status, e.field.unwrap_or_default()),
                (ErrorCode::InvalidParameter, 422, field.to_string()),
                "{body}"
            );
        }
        assert_eq!(
            input(json!([1])).unwrap_err().code,
            ErrorCode::RequestInvalidJson
        );
        assert_eq!(
            input(json!({"name": "n", "items": ok, "note": "x"}))
                .unwrap_err()
                .code,
            ErrorCode::InputAttributeForbidden
        );
        // An item may carry what the reference's clients send with it.
        let c = input(json!({
            "name": "  Zoë Müller ",
            "items": [{"email": "Zoe@Example.COM"}, {"email": "zoe@example.com"}, {"email": "z2@example.org", "isDistributionList": true}],
            "addLinks": true,
        }))
        .unwrap();
        assert_eq!(c.emails, ["zoe@example.com", "z2@example.org"]);
        assert!(c.add_links);
    }
}
