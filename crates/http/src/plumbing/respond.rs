//! Response envelopes and HATEOAS links, as the interface gives them: one list responder
//! ([`listing`]) for the three list envelopes, and the links of a record ([`Linked`]).

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

/// The shape a list is answered in: the interface gives three.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope {
    /// `{data, metadata: {total, limit, offset}}`: most lists of `/rest`.
    Metadata,
    /// `{data, total, page, pageSize}`: the caller's devices and the OAuth clients.
    Paged,
    /// `{items, totalItems}`: `/webhooks`.
    Items,
}

/// Answers a page of records in `envelope`.
pub fn listing<T: Serialize>(envelope: Envelope, l: &Listed<T>) -> HttpResponse {
    HttpResponse::Ok().json(Body { envelope, l })
}

/// The body of [`listing`], as bytes (for an answer kept to be sent again).
pub fn listing_body<T: Serialize>(
    envelope: Envelope,
    l: &Listed<T>,
) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&Body { envelope, l })
}

/// A streamed body re-cut into pieces of at most [`SliceStream::SLICE`] bytes, sharing the
/// stream's bytes. actix copies each piece of a body into its connection's write buffer and
/// starts that buffer over whenever a piece left it above 128 KiB: a download's 256 KiB pieces
/// cost an allocation each, 64 KiB slices reuse the one buffer, which stays in cache. (A kept
/// listing is answered whole: cut, each response of many concurrent ones finished later, as
/// the worker served the other connections between its pieces.)
pub struct SliceStream<S> {
    inner: S,
    held: actix_web::web::Bytes,
}

impl<S> SliceStream<S> {
    /// Twice actix's write buffer (32 KiB), so a slice is one write to the socket.
    pub const SLICE: usize = 64 * 1024;

    pub fn new(inner: S) -> SliceStream<S> {
        SliceStream {
            inner,
            held: actix_web::web::Bytes::new(),
        }
    }
}

impl<S, E> futures_util::Stream for SliceStream<S>
where
    S: futures_util::Stream<Item = Result<actix_web::web::Bytes, E>> + Unpin,
{
    type Item = Result<actix_web::web::Bytes, E>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        while self.held.is_empty() {
            match std::task::ready!(std::pin::Pin::new(&mut self.inner).poll_next(cx)) {
                Some(Ok(b)) => self.held = b,
                other => return std::task::Poll::Ready(other),
            }
        }
        let n = self.held.len().min(Self::SLICE);
        std::task::Poll::Ready(Some(Ok(self.held.split_to(n))))
    }
}

/// A whole list (not a page of a longer one) in `envelope`: its limit is its length, at least 1.
pub fn whole<T: Serialize>(envelope: Envelope, items: Vec<T>) -> HttpResponse {
    let n = items.len() as i64;
    listing(
        envelope,
        &Listed {
            items,
            total: n,
            offset: 0,
            limit: n.max(1),
        },
    )
}

/// An envelope over a page, serialized straight from the records (no intermediate `Value`).
struct Body<'a, T> {
    envelope: Envelope,
    l: &'a Listed<T>,
}

impl<T: Serialize> Serialize for Body<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let l = self.l;
        match self.envelope {
            Envelope::Metadata => {
                #[derive(Serialize)]
                struct Metadata {
                    total: i64,
                    limit: i64,
                    offset: i64,
                }
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("data", &l.items)?;
                m.serialize_entry(
                    "metadata",
                    &Metadata {
                        total: l.total,
                        limit: l.limit,
                        offset: l.offset,
                    },
                )?;
                m.end()
            }
            Envelope::Paged => {
                let page = if l.limit > 0 {
                    (l.offset / l.limit).saturating_add(1)
                } else {
                    1
                };
                let mut m = s.serialize_map(Some(4))?;
                m.serialize_entry("data", &l.items)?;
                m.serialize_entry("total", &l.total)?;
                m.serialize_entry("page", &page)?;
                m.serialize_entry("pageSize", &l.limit)?;
                m.end()
            }
            Envelope::Items => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("items", &l.items)?;
                m.serialize_entry("totalItems", &l.total)?;
                m.end()
            }
        }
    }
}

/// A record that can carry HATEOAS links: `self` (its collection and id) and `collection`.
pub trait Linked {
    /// The collection under `/rest`, e.g. `devices`.
    const COLLECTION: &'static str;
    fn link_id(&self) -> String;
    fn set_links(&mut self, links: Vec<Link>);
}

/// `v` with its links when `on` (`addLinks` or `mode=full` asked for them).
pub fn linked<T: Linked>(base: &str, mut v: T, on: bool) -> T {
    if on {
        v.set_links(links(base, T::COLLECTION, &v.link_id()));
    }
    v
}

/// [`linked`] for every record of a page.
pub fn linked_page<T: Linked>(base: &str, mut l: Listed<T>, on: bool) -> Listed<T> {
    if on {
        for v in &mut l.items {
            v.set_links(links(base, T::COLLECTION, &v.link_id()));
        }
    }
    l
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
