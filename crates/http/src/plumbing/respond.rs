//! Response envelopes and HATEOAS links, as the interface gives them.

use actix_web::HttpResponse;
use coffer_service::platform::views::{Link, Listed};
use serde::Serialize;

/// `links` for one entity: itself and its collection.
pub fn links(base: &str, collection: &str, id: &str) -> Vec<Link> {
    vec![
        Link::new("self", format!("{base}/rest/{collection}/{id}")),
        Link::new("collection", format!("{base}/rest/{collection}")),
    ]
}

/// The devices and clients envelope: `{data, total, page, pageSize}`.
pub fn paged<T: Serialize>(l: &Listed<T>) -> HttpResponse {
    let page = if l.limit > 0 {
        (l.offset / l.limit).saturating_add(1)
    } else {
        1
    };
    HttpResponse::Ok().json(
        serde_json::json!({"data": l.items, "total": l.total, "page": page, "pageSize": l.limit}),
    )
}

/// The usual envelope: `{data, metadata: {total, limit, offset}}`.
pub fn with_metadata<T: Serialize>(l: &Listed<T>) -> HttpResponse {
    HttpResponse::Ok().json(envelope(l))
}

/// The body of [`with_metadata`], as bytes.
pub fn metadata_body<T: Serialize>(l: &Listed<T>) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&envelope(l))
}

fn envelope<T: Serialize>(l: &Listed<T>) -> impl Serialize + '_ {
    #[derive(Serialize)]
    struct Metadata {
        total: i64,
        limit: i64,
        offset: i64,
    }
    #[derive(Serialize)]
    struct Envelope<'a, T> {
        data: &'a [T],
        metadata: Metadata,
    }
    // Serialized straight from the records (no intermediate `Value`).
    Envelope {
        data: &l.items,
        metadata: Metadata {
            total: l.total,
            limit: l.limit,
            offset: l.offset,
        },
    }
}

/// A create's answer: the status and body the interface gives, with `Location`.
pub fn created<T: Serialize>(
    status: actix_web::http::StatusCode,
    location: String,
    body: &T,
) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header(("Location", location))
        .json(body)
}
