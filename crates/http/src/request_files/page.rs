//! The recipient's page of a request-file link (docs/request-files.md, "The recipient's page"):
//! `GET /requestFile/{ref}` and its script and style sheet. The page is a shell that sets no
//! cookie; its script reads the request and sends files and the reply through the API under
//! `/rest/requestFile/{ref}`, where the reference in the path is the recipient's credential (and
//! the session a mailed code opened, for a link that wants proof of the address).

use crate::plumbing::error::RestError;
use crate::plumbing::pages::request_file as pages;
use crate::plumbing::state::{blocking, AppState};
use actix_web::http::header;
use actix_web::web::{self, Data, Path};
use actix_web::HttpResponse;

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
    let limits = blocking(&st, coffer_service::request_files::page::limits).await?;
    Ok(pages::page(&pages::Shell {
        reference: &reference,
        api_version: crate::plumbing::middleware::API_VERSION,
        chunk_size: limits.chunk_size,
        max_size: limits.max_file_size,
    }))
}
