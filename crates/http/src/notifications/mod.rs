//! Folder notifications (`/rest/folders/{id}/actions/setNotifications`, `/rest/notifications`).

use crate::plumbing::body::Body;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{Caller, QueryPairs};
use crate::plumbing::respond::{listing, Envelope};
use crate::plumbing::schema::NotificationBody;
use crate::plumbing::state::{blocking, AppState};
use actix_web::web::{self, Data, Path};
use actix_web::HttpResponse;
use coffer_domain::list::{self, Dir, FieldSpec, Kind, ListSpec, Op, Value};
use coffer_service::notifications::{self as svc, Flags, NotificationQuery, NotificationView};
use coffer_service::platform::views::Link;

/// `PUT /rest/folders/{id}/actions/setNotifications`: `includeNested`; `offset` and `limit`,
/// which the interface names there, are read by the list grammar and change nothing.
pub const SET: ListSpec = ListSpec {
    extra_params: &["includeNested"],
    ..ListSpec::PLAIN
};

/// `GET /rest/notifications`.
pub const LIST: ListSpec = ListSpec {
    filters: &[
        FieldSpec {
            name: "userId",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::In],
        },
        FieldSpec {
            name: "objectId",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::In],
        },
        FieldSpec {
            name: "fileAdded",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "commentAdded",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
    ],
    order_fields: &["userId", "objectId", "fileAdded", "commentAdded"],
    default_order: ("objectId", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: &[],
    extra_params: &[],
    bulk: false,
};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/folders/{id}/actions/setNotifications").route(web::put().to(set)))
        .service(web::resource("/notifications").route(web::get().to(list)))
        .service(web::resource("/notifications/{object_id}").route(web::delete().to(remove)));
}

fn with_links(st: &AppState, mut v: NotificationView, on: bool) -> NotificationView {
    if on {
        let base = st.base_url();
        v.links = Some(vec![
            Link::new("self", format!("{base}/rest/notifications/{}", v.object_id)),
            Link::new("collection", format!("{base}/rest/notifications")),
        ]);
    }
    v
}

#[utoipa::path(put, path = "/rest/folders/{id}/actions/setNotifications", tag = "notifications", params(("id" = String, Path, description = "A folder id"), ("includeNested" = Option<bool>, Query, description = "The same flags on every current sub-folder the caller sees")), request_body(content = Option<NotificationBody>, description = "The flags to set; none subscribes with both flags off, or leaves a subscription as it is"), responses((status = 201, body = NotificationView, description = "A new subscription"), (status = 200, body = NotificationView, description = "The subscription, changed"), (status = 403, description = "`ERR_ENTITY_DELETED`: the folder is in the trash; `ERR_ENTITY_IS_BASE_DIR`, `ERR_ENTITY_IS_MY_DIR`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such folder, or one the caller does not see"), (status = 422, description = "`ERR_INPUT_NOT_INTEGER`: a flag that is not an integer; `ERR_INPUT_NOT_IN_LIST`: one other than 0 or 1; `ERR_INPUT_NOT_BOOLEAN`")), security(("bearer" = [])))]
pub async fn set(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<NotificationBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let q = list::parse(&q, &SET)?;
    let nested = match q.extra("includeNested") {
        Some(v) => list::parse_bool("includeNested", v)?,
        None => false,
    };
    let flags = Flags {
        file_added: body.file_added,
        comment_added: body.comment_added,
    };
    let on = body.add_links.unwrap_or(false) || q.links();
    let id = id.into_inner();
    let (v, created) = blocking(&st, move |ctx| {
        svc::set(ctx, c.user_id(), &id, flags, nested)
    })
    .await?;
    let v = with_links(&st, v, on);
    Ok(if created {
        HttpResponse::Created().json(v)
    } else {
        HttpResponse::Ok().json(v)
    })
}

fn texts(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .filter_map(|v| v.as_text().map(str::to_string))
        .collect()
}

#[utoipa::path(get, path = "/rest/notifications", tag = "notifications", responses((status = 200, body = crate::plumbing::schema::WithMetadata<NotificationView>, description = "The caller's subscriptions to folders they see (an administrator may name other users with `userId`)"), (status = 403, description = "`ERR_ACCESS_USER`: another user's subscriptions, asked by someone who is no administrator")), security(("bearer" = [])))]
pub async fn list(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &LIST)?;
    let mut nq = NotificationQuery {
        order: q.order.0.to_string(),
        descending: q.order.1 == Dir::Desc,
        offset: q.offset,
        limit: q.limit,
        ..Default::default()
    };
    for f in &q.filters {
        match f.field {
            "userId" => nq
                .user_ids
                .get_or_insert_with(Vec::new)
                .extend(texts(&f.values)),
            "objectId" => nq
                .object_ids
                .get_or_insert_with(Vec::new)
                .extend(texts(&f.values)),
            "fileAdded" => nq.file_added = Some(matches!(f.value(), Value::Bool(true))),
            "commentAdded" => nq.comment_added = Some(matches!(f.value(), Value::Bool(true))),
            _ => {}
        }
    }
    let on = q.links();
    let mut l = blocking(&st, move |ctx| svc::list(ctx, &c, &nq)).await?;
    l.items = l
        .items
        .into_iter()
        .map(|v| with_links(&st, v, on))
        .collect();
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(delete, path = "/rest/notifications/{object_id}", tag = "notifications", params(("object_id" = String, Path, description = "A folder id")), responses((status = 204, description = "Unsubscribed"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such folder the caller sees, or no subscription to it")), security(("bearer" = [])))]
pub async fn remove(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    blocking(&st, move |ctx| svc::remove(ctx, c.user_id(), &id)).await?;
    Ok(HttpResponse::NoContent().finish())
}
