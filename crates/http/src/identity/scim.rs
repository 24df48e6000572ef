//! SCIM 2.0 (`/rest/scim`): users in both spellings (`users`, `Users`), searches, and the
//! discovery documents. Callers authenticate with a SCIM token ([`ScimCaller`]); answers and
//! errors are `application/scim+json`. No API version header is needed here.

use crate::plumbing::extract::{bearer, content_type, is_json, read_body, MAX_JSON_BODY};
use crate::plumbing::state::AppState;
use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::web::{self, Bytes, Data, Path};
use actix_web::{FromRequest, HttpRequest, HttpResponse, ResponseError};
use coffer_domain::scim_discovery as discovery;
use coffer_domain::scim_schema::LIST_RESPONSE;
use coffer_service::identity::scim::ScimToken;
use coffer_service::identity::scim::{self as svc, ListParams, ListQuery, ScimFail};
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The media type of SCIM messages (RFC 7644 §8.1).
pub const SCIM_JSON: &str = "application/scim+json";
/// Resources read from the database at a time while a listing streams.
const CHUNK: i64 = 500;

/// A SCIM failure as an HTTP answer.
#[derive(Debug)]
pub struct ScimHttpError(pub ScimFail);

impl fmt::Display for ScimHttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            ScimFail::Client(e) => write!(f, "{} {}", e.status, e.detail),
            ScimFail::Internal(_) => f.write_str("internal error"),
        }
    }
}

impl From<ScimFail> for ScimHttpError {
    fn from(e: ScimFail) -> Self {
        ScimHttpError(e)
    }
}

impl ResponseError for ScimHttpError {
    fn status_code(&self) -> StatusCode {
        match &self.0 {
            ScimFail::Client(e) => e
                .status
                .parse::<u16>()
                .ok()
                .and_then(|s| StatusCode::from_u16(s).ok())
                .unwrap_or(StatusCode::BAD_REQUEST),
            ScimFail::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let body = match &self.0 {
            ScimFail::Client(e) => e.clone(),
            ScimFail::Internal(cause) => {
                crate::plumbing::error::log_internal(cause);
                coffer_errors::ScimError::new(500, None, "An internal error occurred.")
            }
        };
        let mut r = HttpResponse::build(self.status_code());
        r.content_type(SCIM_JSON);
        if self.status_code() == StatusCode::UNAUTHORIZED {
            r.insert_header(("WWW-Authenticate", "Bearer realm=\"coffer-scim\""));
        }
        r.body(serde_json::to_vec(&body).unwrap_or_default())
    }
}

type ScimResult<T> = Result<T, ScimHttpError>;

/// Runs a SCIM service call on the blocking pool.
async fn blocking<T, F>(st: &AppState, f: F) -> ScimResult<T>
where
    T: Send + 'static,
    F: FnOnce(&coffer_service::Ctx) -> Result<T, ScimFail> + Send + 'static,
{
    let ctx = st.ctx.clone();
    match web::block(move || f(&ctx)).await {
        Ok(r) => r.map_err(ScimHttpError),
        Err(e) => Err(ScimHttpError(ScimFail::Internal(
            coffer_errors::InternalError::with_context("running a blocking task", e),
        ))),
    }
}

/// A caller holding a valid SCIM token. OAuth access tokens and browser sessions are refused.
pub struct ScimCaller(pub ScimToken);

impl FromRequest for ScimCaller {
    type Error = ScimHttpError;
    type Future = Pin<Box<dyn Future<Output = ScimResult<Self>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let st = req.app_data::<Data<AppState>>().cloned();
        let token = bearer(req);
        Box::pin(async move {
            let st = st.ok_or_else(|| {
                ScimFail::Internal(coffer_errors::InternalError::new(
                    "application state missing",
                ))
            })?;
            let t = blocking(&st, move |ctx| svc::authenticate(ctx, token.as_deref())).await?;
            Ok(ScimCaller(t))
        })
    }
}

/// A JSON body (`application/scim+json` or `application/json`).
pub struct ScimBody(pub Value);

impl FromRequest for ScimBody {
    type Error = ScimHttpError;
    type Future = Pin<Box<dyn Future<Output = ScimResult<Self>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let mut payload = payload.take();
        let content_type = content_type(req);
        Box::pin(async move {
            let body = read_body(&mut payload, MAX_JSON_BODY)
                .await
                .map_err(|e| ScimFail::new(e.0.status, None, e.0.message.into_owned()))?;
            if !is_json(content_type.as_deref()) {
                return Err(ScimFail::bad(
                    "invalidSyntax",
                    "The body must be JSON sent as application/scim+json.",
                )
                .into());
            }
            let body: Value = serde_json::from_slice(&body).map_err(|e| {
                ScimFail::bad(
                    "invalidSyntax",
                    format!(
                        "The body is not valid JSON (line {}, column {}).",
                        e.line(),
                        e.column()
                    ),
                )
            })?;
            if let Some(at) = unclean_at(&body) {
                return Err(ScimFail::bad(
                    "invalidValue",
                    format!("{at} must not contain control characters."),
                )
                .into());
            }
            Ok(ScimBody(body))
        })
    }
}

/// Where the first string of a body breaks the one rule for text
/// (`coffer_domain::input::is_clean`), e.g. `name.givenName` or `Operations[0].value`.
fn unclean_at(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !coffer_domain::input::is_clean(s, false) => Some(String::new()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, x)| unclean_at(x).map(|rest| format!("[{i}]{}", dotted(&rest)))),
        Value::Object(m) => m
            .iter()
            .find_map(|(k, x)| unclean_at(x).map(|rest| format!("{k}{}", dotted(&rest)))),
        _ => None,
    }
}

fn dotted(rest: &str) -> String {
    if rest.is_empty() || rest.starts_with('[') {
        rest.to_string()
    } else {
        format!(".{rest}")
    }
}

fn scim_json(status: StatusCode, body: &Value) -> HttpResponse {
    HttpResponse::build(status)
        .content_type(SCIM_JSON)
        .body(serde_json::to_vec(body).unwrap_or_default())
}

fn query_value(req: &HttpRequest, name: &str) -> ScimResult<Option<String>> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(req.query_string())
        .map_err(|_| ScimFail::bad("invalidValue", "The query string is malformed."))?;
    let value = pairs
        .into_iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v);
    if value
        .as_deref()
        .is_some_and(|v| !coffer_domain::input::is_clean(v, false))
    {
        return Err(ScimFail::bad(
            "invalidValue",
            format!("{name} must not contain control characters."),
        )
        .into());
    }
    Ok(value)
}

fn if_match(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get("if-match")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn projection(req: &HttpRequest) -> ScimResult<discovery::Projection> {
    let attrs = query_value(req, "attributes")?;
    let excluded = query_value(req, "excludedAttributes")?;
    discovery::parse_projection(attrs.as_deref(), excluded.as_deref())
        .map_err(|e| ScimFail::bad("invalidValue", e).into())
}

/// A single user: the body (projected), its `ETag`, and `Location` on create.
fn user_response(
    status: StatusCode,
    user: &coffer_service::identity::scim::User,
    body: &Value,
    projection: &discovery::Projection,
) -> HttpResponse {
    let mut r = HttpResponse::build(status);
    r.content_type(SCIM_JSON)
        .insert_header(("ETag", svc::etag(user)));
    if status == StatusCode::CREATED {
        if let Some(loc) = body.pointer("/meta/location").and_then(Value::as_str) {
            r.insert_header(("Location", loc.to_string()));
        }
    }
    r.body(serde_json::to_vec(&projection.project(body)).unwrap_or_default())
}

/// `GET /rest/scim/Users`: a listing, streamed from the database.
#[utoipa::path(get, path = "/rest/scim/Users", tag = "scim", params(("filter" = Option<String>, Query, description = "A SCIM filter (RFC 7644 §3.4.2.2)"), ("attributes" = Option<String>, Query, description = "Attributes to return, comma-separated"), ("excludedAttributes" = Option<String>, Query, description = "Attributes to leave out, comma-separated"), ("sortBy" = Option<String>, Query), ("sortOrder" = Option<String>, Query, description = "`ascending` or `descending`"), ("startIndex" = Option<i64>, Query, description = "1-based; less than 1 counts as 1"), ("count" = Option<i64>, Query, description = "0 to 1,000,000; negative counts as 0")), responses((status = 200, body = crate::plumbing::schema::ScimListResponse, content_type = "application/scim+json", description = "The users"), (status = 400, description = "`invalidFilter`, `invalidValue`")), security(("scim" = [])))]
pub async fn list(
    _caller: ScimCaller,
    st: Data<AppState>,
    req: HttpRequest,
) -> ScimResult<HttpResponse> {
    let params = ListParams {
        filter: query_value(&req, "filter")?,
        sort_by: query_value(&req, "sortBy")?,
        sort_order: query_value(&req, "sortOrder")?,
        start_index: query_value(&req, "startIndex")?,
        count: query_value(&req, "count")?,
        attributes: query_value(&req, "attributes")?,
        excluded_attributes: query_value(&req, "excludedAttributes")?,
    };
    listing(st, params).await
}

/// `POST /rest/scim/Users/.search` and `POST /rest/scim/.search`.
#[utoipa::path(post, path = "/rest/scim/Users/.search", tag = "scim", request_body(content = crate::plumbing::schema::ScimSearchBody, content_type = "application/scim+json"), responses((status = 200, body = crate::plumbing::schema::ScimListResponse, content_type = "application/scim+json", description = "The users"), (status = 400, description = "`invalidFilter`, `invalidValue`, `invalidSyntax`")), security(("scim" = [])))]
pub async fn search(
    _caller: ScimCaller,
    st: Data<AppState>,
    ScimBody(body): ScimBody,
) -> ScimResult<HttpResponse> {
    listing(st, ListParams::from_search(&body)?).await
}

/// Streams `{schemas, totalResults, startIndex, Resources: [...], itemsPerPage}`: the resources
/// are read `CHUNK` at a time (keyset pagination) and written as they come, so memory stays flat
/// whatever `count` is. `itemsPerPage` comes last and counts what was actually sent.
async fn listing(st: Data<AppState>, params: ListParams) -> ScimResult<HttpResponse> {
    let q = Arc::new(params.check()?);
    // The first chunk is read before the head: when it holds the rest of the listing, it also
    // gives `totalResults`, and the count query (a scan for broad filters) is saved.
    let first_limit = CHUNK.min(q.count);
    let (first, next) = if first_limit > 0 {
        let q = q.clone();
        blocking(&st, move |ctx| svc::chunk(ctx, &q, None, first_limit)).await?
    } else {
        (Vec::new(), None)
    };
    let whole = first_limit > 0 && next.is_none() && (q.start_index == 1 || !first.is_empty());
    let total = if whole {
        q.start_index - 1 + first.len() as i64
    } else {
        let q = q.clone();
        blocking(&st, move |ctx| svc::total(ctx, &q)).await?
    };
    let head = format!(
        "{{\"schemas\":[\"{LIST_RESPONSE}\"],\"totalResults\":{total},\"startIndex\":{},\"Resources\":[",
        q.start_index
    );
    struct Cursor {
        st: Data<AppState>,
        q: Arc<ListQuery>,
        pending: Option<Vec<Value>>,
        after: Option<coffer_service::identity::scim::Cursor>,
        sent: i64,
        done: bool,
        finished: bool,
        /// The request's id: the body streams after the handler's task has returned.
        request: Option<crate::plumbing::middleware::RequestId>,
    }
    /// Appends resources to the body, comma-separated after the first one sent.
    fn write_items(buf: &mut Vec<u8>, sent: &mut i64, items: &[Value]) {
        for item in items {
            let mark = buf.len();
            if *sent > 0 {
                buf.push(b',');
            }
            if serde_json::to_writer(&mut *buf, item).is_err() {
                buf.truncate(mark);
                break;
            }
            *sent += 1;
        }
    }
    let state = Cursor {
        st,
        q,
        done: next.is_none() || first.is_empty(),
        pending: Some(first),
        after: next,
        sent: 0,
        finished: false,
        request: crate::plumbing::middleware::RequestId::current(),
    };
    let body = futures_util::stream::unfold(state, |mut s| async move {
        if s.finished {
            return None;
        }
        if let Some(items) = s.pending.take() {
            let mut buf = Vec::with_capacity(items.len() * 512);
            write_items(&mut buf, &mut s.sent, &items);
            return Some((Ok::<Bytes, actix_web::Error>(Bytes::from(buf)), s));
        }
        if s.done || s.sent >= s.q.count {
            s.finished = true;
            let tail = format!("],\"itemsPerPage\":{}}}", s.sent);
            return Some((Ok(Bytes::from(tail)), s));
        }
        let limit = CHUNK.min(s.q.count - s.sent);
        let q = s.q.clone();
        let after = s.after.take();
        let got = blocking(&s.st, move |ctx| svc::chunk(ctx, &q, after.as_ref(), limit)).await;
        match got {
            Ok((items, next)) => {
                let mut buf = Vec::with_capacity(items.len() * 512);
                write_items(&mut buf, &mut s.sent, &items);
                s.done = next.is_none() || items.is_empty();
                s.after = next;
                Some((Ok(Bytes::from(buf)), s))
            }
            Err(e) => {
                // The status line is sent: end the body early so the client sees a broken
                // document rather than a short list.
                if let ScimFail::Internal(cause) = &e.0 {
                    crate::plumbing::error::log_internal_for(s.request, cause);
                }
                s.finished = true;
                Some((
                    Err(actix_web::error::ErrorInternalServerError("listing failed")),
                    s,
                ))
            }
        }
    });
    let head =
        futures_util::stream::once(async move { Ok::<Bytes, actix_web::Error>(Bytes::from(head)) });
    Ok(HttpResponse::Ok()
        .content_type(SCIM_JSON)
        .streaming(futures_util::StreamExt::chain(head, body)))
}

/// `POST /rest/scim/Users`.
#[utoipa::path(post, path = "/rest/scim/Users", tag = "scim", params(("attributes" = Option<String>, Query, description = "Attributes to return, comma-separated"), ("excludedAttributes" = Option<String>, Query, description = "Attributes to leave out, comma-separated")), request_body(content = crate::plumbing::schema::ScimUserBody, content_type = "application/scim+json"), responses((status = 201, body = crate::plumbing::schema::ScimUser, content_type = "application/scim+json", description = "The new user, with `Location` and `ETag`"), (status = 400, description = "`invalidValue`, `invalidSyntax`"), (status = 409, description = "`uniqueness`: the userName is taken")), security(("scim" = [])))]
pub async fn create(
    ScimCaller(token): ScimCaller,
    st: Data<AppState>,
    req: HttpRequest,
    ScimBody(body): ScimBody,
) -> ScimResult<HttpResponse> {
    let p = projection(&req)?;
    let (user, r) = blocking(&st, move |ctx| svc::create(ctx, &token, &body)).await?;
    Ok(user_response(StatusCode::CREATED, &user, &r, &p))
}

/// `GET /rest/scim/Users/{id}`.
#[utoipa::path(get, path = "/rest/scim/Users/{id}", tag = "scim", params(("id" = String, Path, description = "A user id"), ("attributes" = Option<String>, Query, description = "Attributes to return, comma-separated"), ("excludedAttributes" = Option<String>, Query, description = "Attributes to leave out, comma-separated")), responses((status = 200, body = crate::plumbing::schema::ScimUser, content_type = "application/scim+json", description = "The user, with `ETag`"), (status = 404, description = "No such user")), security(("scim" = [])))]
pub async fn get(
    _caller: ScimCaller,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
) -> ScimResult<HttpResponse> {
    let p = projection(&req)?;
    let id = id.into_inner();
    let (user, r) = blocking(&st, move |ctx| svc::get(ctx, &id)).await?;
    Ok(user_response(StatusCode::OK, &user, &r, &p))
}

/// `PUT /rest/scim/Users/{id}`.
#[utoipa::path(put, path = "/rest/scim/Users/{id}", tag = "scim", params(("id" = String, Path, description = "A user id"), ("If-Match" = Option<String>, Header, description = "The `ETag` the change starts from"), ("attributes" = Option<String>, Query, description = "Attributes to return, comma-separated"), ("excludedAttributes" = Option<String>, Query, description = "Attributes to leave out, comma-separated")), request_body(content = crate::plumbing::schema::ScimUserBody, content_type = "application/scim+json", description = "The whole user"), responses((status = 200, body = crate::plumbing::schema::ScimUser, content_type = "application/scim+json", description = "The replaced user, with `ETag`"), (status = 404, description = "No such user"), (status = 409, description = "`uniqueness`, or a concurrent change"), (status = 412, description = "Changed since the version in `If-Match`")), security(("scim" = [])))]
pub async fn replace(
    caller: ScimCaller,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    body: ScimBody,
) -> ScimResult<HttpResponse> {
    update(caller, st, req, id, body, svc::replace).await
}

/// `PATCH /rest/scim/Users/{id}`.
#[utoipa::path(patch, path = "/rest/scim/Users/{id}", tag = "scim", params(("id" = String, Path, description = "A user id"), ("If-Match" = Option<String>, Header, description = "The `ETag` the change starts from"), ("attributes" = Option<String>, Query, description = "Attributes to return, comma-separated"), ("excludedAttributes" = Option<String>, Query, description = "Attributes to leave out, comma-separated")), request_body(content = crate::plumbing::schema::ScimPatchBody, content_type = "application/scim+json", description = "PatchOp: add, remove, replace"), responses((status = 200, body = crate::plumbing::schema::ScimUser, content_type = "application/scim+json", description = "The changed user, with `ETag`"), (status = 404, description = "No such user"), (status = 409, description = "`uniqueness`, or a concurrent change"), (status = 412, description = "Changed since the version in `If-Match`")), security(("scim" = [])))]
pub async fn patch(
    caller: ScimCaller,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    body: ScimBody,
) -> ScimResult<HttpResponse> {
    update(caller, st, req, id, body, svc::patch).await
}

/// A service call that changes one user: the id, `If-Match` and the body.
type UpdateFn = fn(
    &coffer_service::Ctx,
    &ScimToken,
    &str,
    Option<&str>,
    &Value,
) -> Result<(coffer_service::identity::scim::User, Value), ScimFail>;

async fn update(
    ScimCaller(token): ScimCaller,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    ScimBody(body): ScimBody,
    call: UpdateFn,
) -> ScimResult<HttpResponse> {
    let p = projection(&req)?;
    let (id, m) = (id.into_inner(), if_match(&req));
    let (user, r) = blocking(&st, move |ctx| call(ctx, &token, &id, m.as_deref(), &body)).await?;
    Ok(user_response(StatusCode::OK, &user, &r, &p))
}

fn flag(req: &HttpRequest, name: &str) -> ScimResult<Option<bool>> {
    match query_value(req, name)?.as_deref() {
        None => Ok(None),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(_) => {
            Err(ScimFail::bad("invalidValue", format!("{name} must be true or false.")).into())
        }
    }
}

/// `DELETE /rest/scim/Users/{id}`: the delete options of an administrator's delete as query
/// parameters.
#[utoipa::path(delete, path = "/rest/scim/Users/{id}", tag = "scim", params(("id" = String, Path, description = "A user id"), ("If-Match" = Option<String>, Header, description = "The `ETag` the change starts from"), ("remoteWipe" = Option<bool>, Query), ("deleteUnsharedData" = Option<bool>, Query), ("retainData" = Option<bool>, Query), ("retainPermissionToSharedData" = Option<bool>, Query), ("retainToUser" = Option<String>, Query)), responses((status = 204, description = "Deleted"), (status = 400, description = "`invalidValue`: the delete options"), (status = 404, description = "No such user"), (status = 412, description = "Changed since the version in `If-Match`")), security(("scim" = [])))]
pub async fn delete(
    _caller: ScimCaller,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
) -> ScimResult<HttpResponse> {
    let opts = coffer_service::identity::users::DeleteOptions {
        remote_wipe: flag(&req, "remoteWipe")?.unwrap_or(false),
        retain_permission_to_shared_data: flag(&req, "retainPermissionToSharedData")?
            .unwrap_or(false),
        retain_to_user: query_value(&req, "retainToUser")?,
        ..Default::default()
    };
    let opts = coffer_service::identity::users::DeleteOptions::check(
        flag(&req, "deleteUnsharedData")?,
        flag(&req, "retainData")?,
        opts,
    )
    .map_err(|e| ScimFail::bad("invalidValue", e.message.into_owned()))?;
    let (id, m) = (id.into_inner(), if_match(&req));
    blocking(&st, move |ctx| svc::delete(ctx, &id, m.as_deref(), &opts)).await?;
    Ok(HttpResponse::NoContent().finish())
}

fn base(st: &AppState) -> String {
    st.ctx.config.base_url.clone()
}

fn list_of(items: Vec<Value>) -> Value {
    serde_json::json!({
        "schemas": [LIST_RESPONSE],
        "totalResults": items.len(),
        "startIndex": 1,
        "itemsPerPage": items.len(),
        "Resources": items,
    })
}

fn not_found(what: &str) -> ScimHttpError {
    ScimFail::new(404, None, format!("{what} does not exist.")).into()
}

/// `GET /rest/scim/ServiceProviderConfig`.
#[utoipa::path(get, path = "/rest/scim/ServiceProviderConfig", tag = "scim", responses((status = 200, body = crate::plumbing::schema::ScimDocument, content_type = "application/scim+json", description = "What this SCIM service supports")), security(("scim" = [])))]
pub async fn service_provider_config(
    _caller: ScimCaller,
    st: Data<AppState>,
) -> ScimResult<HttpResponse> {
    Ok(scim_json(
        StatusCode::OK,
        &discovery::service_provider_config(&base(&st)),
    ))
}

/// `GET /rest/scim/Schemas`.
#[utoipa::path(get, path = "/rest/scim/Schemas", tag = "scim", responses((status = 200, body = crate::plumbing::schema::ScimListResponse, content_type = "application/scim+json", description = "The schemas")), security(("scim" = [])))]
pub async fn schemas(_caller: ScimCaller, st: Data<AppState>) -> ScimResult<HttpResponse> {
    Ok(scim_json(
        StatusCode::OK,
        &list_of(discovery::schemas(&base(&st))),
    ))
}

/// `GET /rest/scim/Schemas/{id}`.
#[utoipa::path(get, path = "/rest/scim/Schemas/{id}", tag = "scim", params(("id" = String, Path, description = "A schema URN")), responses((status = 200, body = crate::plumbing::schema::ScimDocument, content_type = "application/scim+json", description = "The schema"), (status = 404, description = "No such schema")), security(("scim" = [])))]
pub async fn schema(
    _caller: ScimCaller,
    st: Data<AppState>,
    id: Path<String>,
) -> ScimResult<HttpResponse> {
    let doc = discovery::schema(&base(&st), &id).ok_or_else(|| not_found("The schema"))?;
    Ok(scim_json(StatusCode::OK, &doc))
}

/// `GET /rest/scim/ResourceTypes`.
#[utoipa::path(get, path = "/rest/scim/ResourceTypes", tag = "scim", responses((status = 200, body = crate::plumbing::schema::ScimListResponse, content_type = "application/scim+json", description = "The resource types")), security(("scim" = [])))]
pub async fn resource_types(_caller: ScimCaller, st: Data<AppState>) -> ScimResult<HttpResponse> {
    Ok(scim_json(
        StatusCode::OK,
        &list_of(discovery::resource_types(&base(&st))),
    ))
}

/// `GET /rest/scim/ResourceTypes/{id}`.
#[utoipa::path(get, path = "/rest/scim/ResourceTypes/{id}", tag = "scim", params(("id" = String, Path, description = "A resource type name")), responses((status = 200, body = crate::plumbing::schema::ScimDocument, content_type = "application/scim+json", description = "The resource type"), (status = 404, description = "No such resource type")), security(("scim" = [])))]
pub async fn resource_type(
    _caller: ScimCaller,
    st: Data<AppState>,
    id: Path<String>,
) -> ScimResult<HttpResponse> {
    let doc =
        discovery::resource_type(&base(&st), &id).ok_or_else(|| not_found("The resource type"))?;
    Ok(scim_json(StatusCode::OK, &doc))
}

/// The 405 answer of a SCIM path.
pub(crate) fn method_not_allowed() -> HttpResponse {
    ScimHttpError(ScimFail::new(
        405,
        None,
        "The method is not allowed on this path.",
    ))
    .error_response()
}

async fn unknown_path() -> ScimResult<HttpResponse> {
    Err(ScimFail::new(404, None, "There is no SCIM endpoint at this path.").into())
}

/// A resource with its routes; any other method answers 405 in the SCIM form.
fn resource(path: impl Into<String>, routes: Vec<actix_web::Route>) -> actix_web::Resource {
    crate::resource_with(path, routes)
}

/// The SCIM routes, mounted before the `/rest` scope (they need no version header).
pub fn routes(cfg: &mut web::ServiceConfig) {
    let mut scope = web::scope("/rest/scim")
        .service(resource(
            "/ServiceProviderConfig",
            vec![web::get().to(service_provider_config)],
        ))
        .service(resource("/Schemas", vec![web::get().to(schemas)]))
        .service(resource("/Schemas/{id}", vec![web::get().to(schema)]))
        .service(resource(
            "/ResourceTypes",
            vec![web::get().to(resource_types)],
        ))
        .service(resource(
            "/ResourceTypes/{id}",
            vec![web::get().to(resource_type)],
        ))
        .service(resource("/.search", vec![web::post().to(search)]));
    for users in ["/Users", "/users"] {
        scope = scope
            .service(resource(
                format!("{users}/.search"),
                vec![web::post().to(search)],
            ))
            .service(resource(
                users,
                vec![web::get().to(list), web::post().to(create)],
            ))
            .service(resource(
                format!("{users}/{{id}}"),
                vec![
                    web::get().to(get),
                    web::put().to(replace),
                    web::patch().to(patch),
                    web::delete().to(delete),
                ],
            ));
    }
    cfg.service(scope.default_service(web::to(unknown_path)));
}
