//! The recipient's page of a request-file link (docs/request-files.md, "The recipient's page"):
//! `GET /requestFile/{ref}` and its script and style sheet. The page is a shell; its script
//! reads the request and sends files and the reply through `/rest/requestFile/{ref}/...`, where
//! the reference in the path is the recipient's credential, so the page sets no cookie and its
//! calls carry none (nothing for another site to ride on).

use crate::plumbing::error::RestError;
use crate::plumbing::pages::request_file as pages;
use crate::plumbing::state::{blocking, AppState};
use actix_web::http::header;
use actix_web::web::{self, Data, Path};
use actix_web::HttpResponse;

/// The largest chunk the page's script sends (a smaller `uploadChunkMax` wins): large enough
/// for few requests, small enough that a failed chunk costs little to send again.
pub const PAGE_CHUNK: i64 = 8 * 1024 * 1024;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(pages::SCRIPT).route(web::get().to(script)))
        .service(web::resource(pages::STYLE_SHEET).route(web::get().to(style)))
        .service(web::resource("/requestFile/{ref}").route(web::get().to(show)));
}

/// `GET /requestFile/static/request-file.js`: the page's script.
pub async fn script() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/javascript; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
        .body(include_str!("../../assets/request-file.js"))
}

/// `GET /requestFile/static/request-file.css`: the page's style sheet.
pub async fn style() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
        .body(pages::style_sheet())
}

#[utoipa::path(get, path = "/requestFile/{ref}", tag = "requestFile", params(("ref" = String, Path, description = "The link's reference, as the link mail gives it")), responses((status = 200, body = String, content_type = "text/html", description = "The recipient's page: its script shows the request (or why the link no longer opens it), takes files in chunks and sends the reply through `/rest/requestFile/{ref}`")))]
pub async fn show(st: Data<AppState>, reference: Path<String>) -> Result<HttpResponse, RestError> {
    let limits = blocking(&st, |ctx| ctx.read(coffer_service::content::limits)).await?;
    Ok(pages::page(&pages::Shell {
        reference: &reference,
        api_version: crate::plumbing::middleware::API_VERSION,
        chunk_size: limits.upload_chunk_max.min(PAGE_CHUNK),
        max_size: limits.max_upload_size,
    }))
}
