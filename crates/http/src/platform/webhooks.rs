//! `/webhooks` (interface §4.17): management of the caller's webhooks, with no `/rest` prefix,
//! no version header, and the webhook error envelope `{code, message: "[Status Text] detail"}`.

use crate::plumbing::extract::{bearer, read_body, MAX_JSON_BODY};
use crate::plumbing::state::AppState;
use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::web::{self, Data, Path};
use actix_web::{FromRequest, HttpRequest, HttpResponse, ResponseError};
use coffer_errors::WebhookError;
use coffer_service::platform::webhooks::{self as svc, UpdateKind, WebhookInput, WebhookView};
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// An error in the webhook envelope.
#[derive(Debug)]
pub struct WebhookErr(pub WebhookError);

impl WebhookErr {
    fn new(status: u16, detail: &str) -> WebhookErr {
        WebhookErr(WebhookError::new(status, detail))
    }
}

impl fmt::Display for WebhookErr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl ResponseError for WebhookErr {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.0.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        let mut r = HttpResponse::build(self.status_code());
        if self.0.code == 401 {
            r.insert_header(("WWW-Authenticate", "Bearer realm=\"coffer\""));
        }
        r.json(&self.0)
    }
}

impl From<coffer_errors::Error> for WebhookErr {
    fn from(e: coffer_errors::Error) -> Self {
        match e {
            coffer_errors::Error::Api(a) => {
                WebhookErr::new(a.status, a.message.trim_end_matches('.'))
            }
            coffer_errors::Error::Internal(cause) => {
                crate::plumbing::error::log_internal(&cause);
                WebhookErr::new(500, "internal error")
            }
        }
    }
}

async fn run<T: Send + 'static>(
    st: &AppState,
    f: impl FnOnce(&coffer_service::Ctx) -> coffer_service::Result<T> + Send + 'static,
) -> Result<T, WebhookErr> {
    let ctx = st.ctx.clone();
    match web::block(move || f(&ctx)).await {
        Ok(r) => r.map_err(WebhookErr::from),
        Err(e) => Err(coffer_errors::Error::internal_in("running a blocking task", e).into()),
    }
}

/// The caller of a webhook call: a valid bearer token whose scope covers `webhooks`.
pub struct WebhookCaller(pub coffer_service::platform::auth::Caller);

impl FromRequest for WebhookCaller {
    type Error = WebhookErr;
    type Future = Pin<Box<dyn Future<Output = Result<Self, WebhookErr>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let st = req.app_data::<Data<AppState>>().cloned();
        let token = bearer(req);
        let req = req.clone();
        let method = req.method().to_string();
        // Scopes name REST entities; webhook management is the entity `webhooks`.
        let path = format!("/rest{}", req.path());
        Box::pin(async move {
            let st = st.ok_or_else(|| WebhookErr::new(500, "internal error"))?;
            let token = token.ok_or_else(|| WebhookErr::new(401, "a bearer token is required"))?;
            let found = run(&st, move |ctx| {
                coffer_service::platform::auth::authenticate(ctx, &token, &method, &path)
            })
            .await;
            if let Err(e) = &found {
                crate::plumbing::extract::Challenge::record(&req, e.0.code);
            }
            Ok(WebhookCaller(found?))
        })
    }
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    let resource = |path: &str, routes: Vec<actix_web::Route>| crate::resource_with(path, routes);
    cfg.service(resource(
        "/webhooks",
        vec![web::get().to(list), web::post().to(create)],
    ))
    .service(web::resource("/webhooks/").to(id_missing))
    .service(resource(
        "/webhooks/{id}/deliveries",
        vec![web::get().to(deliveries)],
    ))
    .service(resource(
        "/webhooks/{id}/deliveries/{delivery_id}/redeliver",
        vec![web::post().to(redeliver)],
    ))
    .service(resource("/webhooks/{id}/ping", vec![web::post().to(ping)]))
    .service(resource(
        "/webhooks/{id}",
        vec![
            web::get().to(get),
            web::put().to(replace),
            web::patch().to(patch),
            web::delete().to(delete),
        ],
    ));
}

/// The 405 answer of a webhook path.
pub(crate) fn method_not_allowed() -> HttpResponse {
    WebhookErr::new(405, "method not allowed").error_response()
}

async fn id_missing() -> HttpResponse {
    WebhookErr::new(400, "webhook id must be provided").error_response()
}

fn parse_id(raw: &str) -> Result<String, WebhookErr> {
    uuid::Uuid::parse_str(raw)
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| WebhookErr::new(400, "invalid UUID format"))
}

fn etag(v: &WebhookView) -> String {
    format!("\"{}\"", v.version)
}

/// The version an `If-Match` names (`"3"` or `W/"3"`); `*` or no header means any.
fn if_match(req: &HttpRequest) -> Result<Option<i64>, WebhookErr> {
    let Some(h) = req.headers().get("if-match") else {
        return Ok(None);
    };
    let v = h
        .to_str()
        .map_err(|_| WebhookErr::new(400, "invalid If-Match header"))?
        .trim();
    if v == "*" {
        return Ok(None);
    }
    v.trim_start_matches("W/")
        .trim_matches('"')
        .parse::<i64>()
        .map(Some)
        .map_err(|_| WebhookErr::new(400, "invalid If-Match header"))
}

/// The fields of a webhook body.
const FIELDS: [&str; 5] = ["url", "token", "secret", "enabled", "subscriptions"];

/// Reads the JSON body into the input fields, refusing unparsable JSON, fields a webhook does not
/// have and wrong types.
async fn input(payload: &mut web::Payload) -> Result<WebhookInput, WebhookErr> {
    let body = read_body(payload, MAX_JSON_BODY).await.map_err(|e| {
        WebhookErr::new(
            e.0.status,
            if e.0.status == 413 {
                "request body is too large"
            } else if e.0.status == 408 {
                "request body did not arrive in time"
            } else {
                "request body could not be read"
            },
        )
    })?;
    let v: Value =
        serde_json::from_slice(&body).map_err(|_| WebhookErr::new(400, "unparsable JSON"))?;
    let obj = v
        .as_object()
        .ok_or_else(|| WebhookErr::new(400, "the request body must be a JSON object"))?;
    // A field no webhook has is refused, not dropped: a client that misspells `subscriptions`
    // learns it instead of getting a webhook without them.
    if let Some(name) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        let name: String = name.chars().filter(|c| !c.is_control()).take(64).collect();
        return Err(WebhookErr::new(
            400,
            &format!("webhook.{name} is not a field of a webhook"),
        ));
    }
    let string = |name: &str| -> Result<Option<String>, WebhookErr> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            // The one rule for text (`coffer_domain::input::is_clean`), in this area's 400.
            Some(Value::String(s)) if coffer_domain::input::is_clean(s, false) => {
                Ok(Some(s.clone()))
            }
            Some(Value::String(_)) => Err(WebhookErr::new(
                400,
                &format!("webhook.{name} must not contain control characters"),
            )),
            Some(_) => Err(WebhookErr::new(
                400,
                &format!("webhook.{name} must be a string"),
            )),
        }
    };
    let enabled = match obj.get("enabled") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(WebhookErr::new(400, "webhook.enabled must be a boolean")),
    };
    let subscriptions = match obj.get("subscriptions") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => {
            if items.len() > svc::MAX_SUBSCRIPTIONS {
                return Err(WebhookErr::new(
                    400,
                    &format!(
                        "webhook.subscriptions may hold at most {} patterns",
                        svc::MAX_SUBSCRIPTIONS
                    ),
                ));
            }
            Some(
                items
                    .iter()
                    .map(|i| i.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        WebhookErr::new(400, "webhook.subscriptions must be an array of strings")
                    })?,
            )
        }
        Some(_) => {
            return Err(WebhookErr::new(
                400,
                "webhook.subscriptions must be an array of strings",
            ))
        }
    };
    Ok(WebhookInput {
        url: string("url")?,
        token: string("token")?,
        secret: string("secret")?,
        enabled,
        subscriptions,
    })
}

/// `offset` and `limit` are 0 or a positive integer.
fn page(req: &HttpRequest) -> Result<(i64, i64), WebhookErr> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(req.query_string()).unwrap_or_default();
    let mut offset = 0;
    let mut limit = svc::DEFAULT_LIMIT;
    for (k, v) in pairs {
        let n = || {
            v.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
                WebhookErr::new(
                    400,
                    &format!("invalid parameter, details:[0-{k} must be integer]"),
                )
            })
        };
        match k.as_str() {
            "offset" => offset = n()?,
            // 0 asks for the default page size.
            "limit" => {
                limit = Some(n()?)
                    .filter(|l| *l > 0)
                    .unwrap_or(svc::DEFAULT_LIMIT)
                    .min(svc::MAX_LIMIT)
            }
            _ => {}
        }
    }
    Ok((offset, limit))
}

/// A page of this API in its own envelope, `{items, totalItems}`.
fn page_of<T: serde::Serialize>(
    items: Vec<T>,
    total: i64,
    offset: i64,
    limit: i64,
) -> HttpResponse {
    let l = coffer_service::platform::views::Listed {
        items,
        total,
        offset,
        limit,
    };
    crate::plumbing::respond::listing(crate::plumbing::respond::Envelope::Items, &l)
}

#[utoipa::path(get, path = "/webhooks", tag = "webhooks", params(("offset" = Option<i64>, Query, description = "Items to skip", minimum = 0), ("limit" = Option<i64>, Query, description = "Items per page: 0 (the default, 100) to 1000; more is cut to 1000", minimum = 0)), responses((status = 200, body = crate::plumbing::schema::Items<WebhookView>, description = "The caller's webhooks")), security(("bearer" = [])))]
pub async fn list(
    WebhookCaller(c): WebhookCaller,
    st: Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, WebhookErr> {
    let (offset, limit) = page(&req)?;
    let (items, total) = run(&st, move |ctx| svc::list(ctx, &c, offset, limit)).await?;
    Ok(page_of(items, total, offset, limit))
}

#[utoipa::path(post, path = "/webhooks", tag = "webhooks", request_body(content = crate::plumbing::schema::WebhookBody), responses((status = 201, body = WebhookView, description = "The new webhook, with `Location`", headers(("ETag" = String, description = "The webhook's version, for `If-Match`"), ("Location" = String)))), security(("bearer" = [])))]
pub async fn create(
    WebhookCaller(c): WebhookCaller,
    st: Data<AppState>,
    mut payload: web::Payload,
) -> Result<HttpResponse, WebhookErr> {
    let input = input(&mut payload).await?;
    let v = run(&st, move |ctx| svc::create(ctx, &c, input)).await?;
    Ok(HttpResponse::Created()
        .insert_header(("Location", format!("{}/webhooks/{}", st.base_url(), v.id)))
        .insert_header(("ETag", etag(&v)))
        .json(v))
}

#[utoipa::path(get, path = "/webhooks/{id}", tag = "webhooks", params(("id" = String, Path, description = "A webhook id (UUID)", pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")), responses((status = 200, body = WebhookView, description = "The webhook", headers(("ETag" = String, description = "The webhook's version, for `If-Match`"))), (status = 404, description = "No such webhook of the caller")), security(("bearer" = [])))]
pub async fn get(
    WebhookCaller(c): WebhookCaller,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, WebhookErr> {
    let id = parse_id(&id)?;
    let v = run(&st, move |ctx| svc::get(ctx, &c, &id)).await?;
    Ok(HttpResponse::Ok().insert_header(("ETag", etag(&v))).json(v))
}

async fn update(
    c: WebhookCaller,
    st: Data<AppState>,
    id: Path<String>,
    req: HttpRequest,
    mut payload: web::Payload,
    kind: UpdateKind,
) -> Result<HttpResponse, WebhookErr> {
    let id = parse_id(&id)?;
    let expected = if_match(&req)?;
    let input = input(&mut payload).await?;
    let caller = c.0;
    let v = run(&st, move |ctx| {
        svc::update(ctx, &caller, &id, input, kind, expected)
    })
    .await?;
    Ok(HttpResponse::Ok().insert_header(("ETag", etag(&v))).json(v))
}

#[utoipa::path(put, path = "/webhooks/{id}", tag = "webhooks", params(("id" = String, Path, description = "A webhook id (UUID)", pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"), ("If-Match" = Option<String>, Header, description = "The `ETag` the update starts from (`\"3\"`, `W/\"3\"`), or `*`", pattern = "^\\s*(\\*|(W/)?\"*[+-]?[0-9]+\"*)\\s*$")), request_body(content = crate::plumbing::schema::WebhookBody, description = "As create; an absent `token` is removed"), responses((status = 200, body = WebhookView, description = "The updated webhook", headers(("ETag" = String, description = "The webhook's version, for `If-Match`"))), (status = 404, description = "No such webhook of the caller"), (status = 409, description = "Changed since the version in `If-Match`")), security(("bearer" = [])))]
pub async fn replace(
    c: WebhookCaller,
    st: Data<AppState>,
    id: Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, WebhookErr> {
    update(c, st, id, req, payload, UpdateKind::Replace).await
}

#[utoipa::path(patch, path = "/webhooks/{id}", tag = "webhooks", params(("id" = String, Path, description = "A webhook id (UUID)", pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"), ("If-Match" = Option<String>, Header, description = "The `ETag` the update starts from (`\"3\"`, `W/\"3\"`), or `*`", pattern = "^\\s*(\\*|(W/)?\"*[+-]?[0-9]+\"*)\\s*$")), request_body(content = crate::plumbing::schema::WebhookPatchBody, description = "Any of the create fields"), responses((status = 200, body = WebhookView, description = "The updated webhook", headers(("ETag" = String, description = "The webhook's version, for `If-Match`"))), (status = 404, description = "No such webhook of the caller"), (status = 409, description = "Changed since the version in `If-Match`")), security(("bearer" = [])))]
pub async fn patch(
    c: WebhookCaller,
    st: Data<AppState>,
    id: Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, WebhookErr> {
    update(c, st, id, req, payload, UpdateKind::Patch).await
}

#[utoipa::path(delete, path = "/webhooks/{id}", tag = "webhooks", params(("id" = String, Path, description = "A webhook id (UUID)", pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")), responses((status = 204, description = "Deleted"), (status = 404, description = "No such webhook of the caller")), security(("bearer" = [])))]
pub async fn delete(
    WebhookCaller(c): WebhookCaller,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, WebhookErr> {
    let id = parse_id(&id)?;
    run(&st, move |ctx| svc::delete(ctx, &c, &id)).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(get, path = "/webhooks/{id}/deliveries", tag = "webhooks", params(("id" = String, Path, description = "A webhook id (UUID)", pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"), ("offset" = Option<i64>, Query, description = "Items to skip", minimum = 0), ("limit" = Option<i64>, Query, description = "Items per page: 0 (the default, 100) to 1000; more is cut to 1000", minimum = 0)), responses((status = 200, body = crate::plumbing::schema::Items<coffer_service::platform::webhooks::DeliveryView>, description = "Coffer: the delivery log, newest first, each with its attempts"), (status = 404, description = "No such webhook of the caller")), security(("bearer" = [])))]
pub async fn deliveries(
    WebhookCaller(c): WebhookCaller,
    st: Data<AppState>,
    id: Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, WebhookErr> {
    let id = parse_id(&id)?;
    let (offset, limit) = page(&req)?;
    let (items, total) = run(&st, move |ctx| svc::deliveries(ctx, &c, &id, offset, limit)).await?;
    Ok(page_of(items, total, offset, limit))
}

#[utoipa::path(post, path = "/webhooks/{id}/deliveries/{delivery_id}/redeliver", tag = "webhooks", params(("id" = String, Path, description = "A webhook id (UUID)", pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"), ("delivery_id" = String, Path, description = "A delivery id")), responses((status = 202, body = crate::plumbing::schema::DeliveryId, description = "Coffer: the delivery is sent again now, with the same webhook-id"), (status = 404, description = "No such webhook or delivery"), (status = 409, description = "The webhook is disabled")), security(("bearer" = [])))]
pub async fn redeliver(
    WebhookCaller(c): WebhookCaller,
    st: Data<AppState>,
    path: Path<(String, String)>,
) -> Result<HttpResponse, WebhookErr> {
    let (id, delivery_id) = path.into_inner();
    let id = parse_id(&id)?;
    let d = delivery_id.clone();
    run(&st, move |ctx| svc::redeliver(ctx, &c, &id, &d)).await?;
    Ok(HttpResponse::Accepted().json(serde_json::json!({"id": delivery_id})))
}

#[utoipa::path(post, path = "/webhooks/{id}/ping", tag = "webhooks", params(("id" = String, Path, description = "A webhook id (UUID)", pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")), responses((status = 202, body = crate::plumbing::schema::DeliveryId, description = "Coffer: a `webhook.webhook.ping` delivery to this webhook"), (status = 404, description = "No such webhook of the caller"), (status = 409, description = "The webhook is disabled")), security(("bearer" = [])))]
pub async fn ping(
    WebhookCaller(c): WebhookCaller,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, WebhookErr> {
    let id = parse_id(&id)?;
    let delivery = run(&st, move |ctx| svc::ping(ctx, &c, &id)).await?;
    Ok(HttpResponse::Accepted().json(serde_json::json!({"id": delivery})))
}
