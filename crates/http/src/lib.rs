//! Coffer's HTTP layer (actix-web): one `configure` function that production and tests share,
//! thin handlers per interface area, the extractors that carry authorization, the envelopes,
//! and the middleware every request passes.

pub mod content;
pub mod dli;
pub mod favorites;
pub mod identity;
pub mod mail;
pub mod notifications;
pub mod oauth;
pub mod platform;
pub mod plumbing;
pub mod request_files;
pub mod search;
pub mod sources;
pub mod web_forms;

use actix_web::dev::{Server, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::middleware::{from_fn, ErrorHandlerResponse, ErrorHandlers};
use actix_web::web::{self, Data};
use actix_web::{App, HttpResponse, HttpServer};
use coffer_errors::{ApiError, ErrorCode};
use std::net::TcpListener;

pub use plumbing::state::{AppState, DEFAULT_BODY_TIMEOUT};
pub use plumbing::waf::Waf;

/// Every route of the server.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/").route(web::get().to(home)))
        .service(web::resource("/health").route(web::get().to(health)))
        .service(web::resource("/ready").route(web::get().to(ready)))
        .service(web::resource("/openapi.json").route(web::get().to(plumbing::openapi::serve)))
        .configure(plumbing::docs::routes)
        .configure(oauth::routes)
        .configure(identity::reset_page::routes)
        .configure(mail::pages::routes)
        .configure(web_forms::page_routes)
        .configure(request_files::page::routes)
        .configure(platform::webhooks::routes)
        .configure(identity::scim::routes)
        .service(
            web::scope("/rest")
                .wrap(from_fn(plumbing::middleware::rest_gate))
                .configure(identity::account::routes)
                .configure(identity::admin_users::routes)
                .configure(identity::devices::routes)
                .configure(identity::clients::routes)
                .configure(platform::locations::routes)
                .configure(mail::contacts::routes)
                .configure(mail::routes)
                .configure(identity::external_dl::routes)
                .configure(identity::ssh_keys::routes)
                .configure(mail::shared_mailboxes::routes)
                .configure(web_forms::routes)
                .configure(content::routes)
                .configure(content::transfer::routes)
                .configure(favorites::routes)
                .configure(notifications::routes)
                .configure(request_files::routes)
                .configure(search::routes)
                .configure(dli::routes)
                .configure(sources::routes)
                .default_service(web::to(not_found)),
        )
        // The chunk endpoint as the reference spells it, with a node's name first.
        .service(
            web::scope("/{host_name}/rest")
                .wrap(from_fn(plumbing::middleware::rest_gate))
                .configure(content::transfer::host_routes)
                .default_service(web::to(not_found)),
        );
}

/// A resource with its routes; any other method answers 405 with `Allow` (see
/// [`method_not_allowed`]).
pub(crate) fn resource_with(
    path: impl Into<String>,
    routes: Vec<actix_web::Route>,
) -> actix_web::Resource {
    routes
        .into_iter()
        .fold(web::resource(path.into()), |r, route| r.route(route))
}

/// The home page: what this server is, which interface it speaks and how to read the vendor's
/// version header, with links to the interactive reference, the API description and the OAuth
/// metadata.
#[utoipa::path(get, path = "/", tag = "operations", responses((status = 200, description = "An HTML page naming the server and its version", content_type = "text/html")))]
pub async fn home(st: Data<AppState>) -> HttpResponse {
    plumbing::pages::home(&st.ctx.config.version_brand)
}

/// Liveness: answers without touching the database.
#[utoipa::path(get, path = "/health", tag = "operations", responses((status = 200, body = crate::plumbing::schema::Status, description = "Alive")))]
pub async fn health() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

/// Readiness: the database answers.
#[utoipa::path(get, path = "/ready", tag = "operations", responses((status = 200, body = crate::plumbing::schema::Status, description = "The database answers"), (status = 503, body = crate::plumbing::schema::Status, description = "The database does not answer")))]
pub async fn ready(st: Data<AppState>) -> HttpResponse {
    let ok = plumbing::state::blocking(&st, |ctx| ctx.with_conn(|_| Ok(())))
        .await
        .is_ok();
    if ok {
        HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
    } else {
        HttpResponse::ServiceUnavailable().json(serde_json::json!({"status": "unavailable"}))
    }
}

async fn not_found() -> HttpResponse {
    plumbing::error::rest_error(&ApiError::new(ErrorCode::RequestNotFound))
}

/// A known path with a method it does not take: 405 in the area's envelope (REST, webhook or
/// SCIM), keeping the `Allow` header with the methods the path takes (RFC 9110 §15.5.6).
fn method_not_allowed<B>(res: ServiceResponse<B>) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let allow = res.headers().get(actix_web::http::header::ALLOW).cloned();
    let path = res.request().path();
    let mut answer = if path.starts_with("/webhooks") {
        platform::webhooks::method_not_allowed()
    } else if path.starts_with("/rest/scim") {
        identity::scim::method_not_allowed()
    } else {
        plumbing::error::rest_error(&ApiError::new(ErrorCode::RequestMethodNotAllowed))
    };
    if let Some(allow) = allow {
        answer
            .headers_mut()
            .insert(actix_web::http::header::ALLOW, allow);
    }
    let (req, _) = res.into_parts();
    Ok(ErrorHandlerResponse::Response(
        ServiceResponse::new(req, answer).map_into_right_body(),
    ))
}

/// Starts the server on a bound listener (port 0 in tests).
pub fn server(state: AppState, listener: TcpListener, workers: usize) -> std::io::Result<Server> {
    server_with_tls(state, listener, workers, None)
}

/// [`server`], serving HTTPS with the pair of `tls` when given.
pub fn server_with_tls(
    state: AppState,
    listener: TcpListener,
    workers: usize,
    tls: Option<std::sync::Arc<plumbing::tls::Tls>>,
) -> std::io::Result<Server> {
    let workers = workers.max(1);
    // Handlers wait for the database on the blocking pool. More threads than connections only
    // queue there, each with its own stack and allocator arena, so the pool matches the
    // connection pool.
    let blocking = (state.ctx.db.max_size() as usize / workers).max(2);
    let data = Data::new(state);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .wrap(from_fn(plumbing::middleware::body_deadline))
            .wrap(ErrorHandlers::new().handler(StatusCode::METHOD_NOT_ALLOWED, method_not_allowed))
            .wrap(from_fn(plumbing::middleware::waf))
            .wrap(from_fn(plumbing::middleware::log_and_headers))
            .configure(configure)
            .default_service(web::to(not_found))
    })
    .workers(workers)
    .worker_max_blocking_threads(blocking);
    let server = match tls {
        Some(tls) => server.listen_rustls_0_23(listener, tls.server_config())?,
        None => server.listen(listener)?,
    }
    .run();
    Ok(server)
}
