//! `GET /docs`: the interactive API reference, a page that reads `/openapi.json` and lists every
//! operation with its parameters, bodies and errors. The viewer is Swagger UI, whose release
//! archive comes inside the `utoipa-swagger-ui-vendored` crate and so inside the binary: the page
//! and every script and style it loads are served from this server, it works without the
//! internet, and its Content-Security-Policy allows scripts and styles from this origin only.

use crate::plumbing::error::RestError;
use actix_web::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY};
use actix_web::web;
use actix_web::HttpResponse;
use coffer_errors::{Error, ErrorCode, InternalError};
use std::collections::HashMap;
use std::io::Read;
use std::sync::OnceLock;

/// The policy of `/docs` and its files. Scripts, styles and fonts come from this origin only:
/// no inline script, no `eval`, no inline `<style>`. The two additions to the policy of the
/// other pages are what the viewer needs: `img-src data:` for the icons its stylesheet carries
/// as `data:` URLs, and `connect-src 'self'` to read `/openapi.json` and to send the requests
/// of "Try it out" to this server.
pub const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; font-src 'self'; connect-src 'self'; frame-ancestors 'none'; \
     base-uri 'none'; form-action 'none'";

/// The page itself: the viewer's files by absolute path (so `/docs` and `/docs/` serve the same
/// page), and its settings in a file of their own ([`START`]) rather than an inline script.
const PAGE: &str = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>API reference · Coffer</title>\
<link rel=\"stylesheet\" href=\"/docs/swagger-ui.css\">\
<link rel=\"stylesheet\" href=\"/docs/index.css\">\
<link rel=\"icon\" type=\"image/png\" href=\"/docs/favicon-32x32.png\" sizes=\"32x32\">\
</head><body><div id=\"swagger-ui\"></div>\
<script src=\"/docs/swagger-ui-bundle.js\"></script>\
<script src=\"/docs/swagger-ui-standalone-preset.js\"></script>\
<script src=\"/docs/coffer-docs.js\"></script>\
</body></html>\n";

/// Starts the viewer on this server's document: operations open by link (`deepLinking`), and
/// no validator badge (it would send the document's address to a validator elsewhere and load
/// its image from there, which the policy forbids anyway).
const START: &str = "window.addEventListener('load', function () {\n\
  window.ui = SwaggerUIBundle({\n\
    url: '/openapi.json',\n\
    dom_id: '#swagger-ui',\n\
    deepLinking: true,\n\
    displayRequestDuration: true,\n\
    validatorUrl: null,\n\
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],\n\
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],\n\
    layout: 'StandaloneLayout'\n\
  });\n\
});\n";

/// The files of the archive the page uses, with their media types; nothing else is served.
const FILES: &[(&str, &str)] = &[
    ("swagger-ui.css", "text/css; charset=utf-8"),
    ("index.css", "text/css; charset=utf-8"),
    ("swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
    (
        "swagger-ui-standalone-preset.js",
        "text/javascript; charset=utf-8",
    ),
    ("favicon-32x32.png", "image/png"),
    ("favicon-16x16.png", "image/png"),
];

/// The routes of the reference: the page and its files.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(["/docs", "/docs/"]).route(web::get().to(page)))
        .service(web::resource("/docs/{file}").route(web::get().to(file)));
}

fn answer(kind: &str, body: impl actix_web::body::MessageBody + 'static) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((CONTENT_SECURITY_POLICY, POLICY))
        .insert_header((CACHE_CONTROL, "no-cache"))
        .content_type(kind)
        .body(body)
}

async fn page() -> HttpResponse {
    answer("text/html; charset=utf-8", PAGE)
}

/// One of the viewer's files, by its name (one path segment); any other name is 404
/// `ERR_REQUEST_NOT_FOUND`.
async fn file(name: web::Path<String>) -> Result<HttpResponse, RestError> {
    let name = name.into_inner();
    if name == "coffer-docs.js" {
        return Ok(answer("text/javascript; charset=utf-8", START));
    }
    let Some((_, kind)) = FILES.iter().find(|(n, _)| *n == name) else {
        return Err(ErrorCode::RequestNotFound.into());
    };
    let files = unpacked().as_ref().map_err(|e| {
        RestError::from(Error::Internal(InternalError::new(format!(
            "the API reference's files: {e}"
        ))))
    })?;
    match files.get(name.as_str()) {
        Some(bytes) => Ok(answer(kind, bytes.clone())),
        None => Err(Error::Internal(InternalError::new(format!(
            "the API reference's archive has no {name}"
        )))
        .into()),
    }
}

/// The files of [`FILES`], unpacked from the archive once, at their first request.
fn unpacked() -> &'static Result<HashMap<&'static str, actix_web::web::Bytes>, String> {
    static FILES_UNPACKED: OnceLock<Result<HashMap<&'static str, actix_web::web::Bytes>, String>> =
        OnceLock::new();
    FILES_UNPACKED.get_or_init(|| {
        let archive = utoipa_swagger_ui_vendored::SWAGGER_UI_VENDORED;
        let mut out = HashMap::new();
        for entry in zip_entries(archive)? {
            let Some((_, base)) = entry.name.rsplit_once("/dist/") else {
                continue;
            };
            if let Some((name, _)) = FILES.iter().find(|(n, _)| *n == base) {
                out.insert(*name, entry.read(archive)?.into());
            }
        }
        Ok(out)
    })
}

/// A file of a zip archive, as its central directory describes it.
struct ZipEntry {
    name: String,
    method: u16,
    compressed: usize,
    size: usize,
    local_header: usize,
}

fn u16_at(b: &[u8], at: usize) -> Result<u16, String> {
    b.get(at..at + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| "truncated archive".to_string())
}

fn u32_at(b: &[u8], at: usize) -> Result<usize, String> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize)
        .ok_or_else(|| "truncated archive".to_string())
}

/// The entries of a zip archive (no zip64, no encryption: a release archive of a web viewer).
fn zip_entries(b: &[u8]) -> Result<Vec<ZipEntry>, String> {
    // The end-of-central-directory record is the last thing in the archive, before a comment
    // of at most 64 KiB.
    let end = (0..b.len().saturating_sub(21))
        .rev()
        .take(65_536 + 22)
        .find(|&i| b[i..].starts_with(&[0x50, 0x4b, 0x05, 0x06]))
        .ok_or("no end of central directory")?;
    let count = u16_at(b, end + 10)? as usize;
    let mut at = u32_at(b, end + 16)?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        if !b[at..].starts_with(&[0x50, 0x4b, 0x01, 0x02]) {
            return Err("a malformed central directory".into());
        }
        let name_len = u16_at(b, at + 28)? as usize;
        let extra_len = u16_at(b, at + 30)? as usize;
        let comment_len = u16_at(b, at + 32)? as usize;
        let name = b
            .get(at + 46..at + 46 + name_len)
            .ok_or("truncated archive")?;
        out.push(ZipEntry {
            name: String::from_utf8_lossy(name).into_owned(),
            method: u16_at(b, at + 10)?,
            compressed: u32_at(b, at + 20)?,
            size: u32_at(b, at + 24)?,
            local_header: u32_at(b, at + 42)?,
        });
        at += 46 + name_len + extra_len + comment_len;
    }
    Ok(out)
}

impl ZipEntry {
    /// The entry's content, stored or deflated.
    fn read(&self, b: &[u8]) -> Result<Vec<u8>, String> {
        let h = self.local_header;
        if !b
            .get(h..)
            .is_some_and(|s| s.starts_with(&[0x50, 0x4b, 0x03, 0x04]))
        {
            return Err(format!("{}: no local header", self.name));
        }
        let start = h + 30 + u16_at(b, h + 26)? as usize + u16_at(b, h + 28)? as usize;
        let data = b
            .get(start..start + self.compressed)
            .ok_or("truncated archive")?;
        let content = match self.method {
            0 => data.to_vec(),
            8 => {
                let mut out = Vec::with_capacity(self.size);
                flate2::read::DeflateDecoder::new(data)
                    .take(self.size as u64 + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| format!("{}: {e}", self.name))?;
                out
            }
            m => return Err(format!("{}: compression method {m}", self.name)),
        };
        if content.len() != self.size {
            return Err(format!(
                "{}: {} bytes, not {}",
                self.name,
                content.len(),
                self.size
            ));
        }
        Ok(content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_the_page_names_is_in_the_archive() {
        let files = unpacked().as_ref().unwrap();
        for (name, _) in FILES {
            let bytes = files.get(name).unwrap_or_else(|| panic!("{name}"));
            assert!(bytes.len() > 100, "{name}: {} bytes", bytes.len());
        }
        assert!(std::str::from_utf8(&files["swagger-ui-bundle.js"])
            .unwrap()
            .contains("SwaggerUIBundle"));
        for (_, link) in PAGE.split("=\"/docs/").enumerate().skip(1) {
            let name = &link[..link.find('"').unwrap()];
            assert!(
                name == "coffer-docs.js" || FILES.iter().any(|(n, _)| *n == name),
                "{name}"
            );
        }
    }
}
