//! Reading a PROPFIND answer (`DAV:multistatus`, RFC 4918 §14.16) as a stream of XML events.
//!
//! Elements are matched by namespace URI and local name, never by prefix. A document type
//! declaration is refused outright (no entity is ever declared, so none is expanded: the
//! "billion laughs" cannot happen), and so is a reference to any entity but the five XML
//! predefines. The caller caps the bytes read and the number of responses.

use std::io::BufRead;

use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;

use crate::SourceError;

const DAV: &[u8] = b"DAV:";

/// One `response`: its href and the properties of its successful propstats.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Response {
    pub href: String,
    pub is_collection: bool,
    pub content_length: Option<String>,
    pub last_modified: Option<String>,
    pub creation_date: Option<String>,
    pub etag: Option<String>,
    pub content_type: Option<String>,
}

/// Why a document was not read.
#[derive(Debug)]
pub(crate) enum ParseError {
    /// More responses than `max`.
    TooMany,
    /// Not a multistatus document Coffer reads (the text says why, for the log).
    Bad(String),
    /// Reading the body failed (the cap, a time-out, the connection).
    Read(SourceError),
}

/// The properties being read within one propstat.
#[derive(Default)]
struct PropStat {
    status_ok: Option<bool>,
    props: Response,
}

/// The elements the reader tells apart: the DAV: names it reads, and every other element
/// (another namespace, or a DAV: name it has no use for) as `Other`. Kept on the stack of open
/// elements as a plain value, so that an element costs no allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    Multistatus,
    Response,
    Href,
    Propstat,
    Status,
    Prop,
    ResourceType,
    Collection,
    ContentLength,
    LastModified,
    CreationDate,
    Etag,
    ContentType,
    Other,
}

impl Name {
    fn of(ns: &ResolveResult<'_>, local: &[u8]) -> Name {
        match ns {
            ResolveResult::Bound(n) if n.0 == DAV => match local {
                b"multistatus" => Name::Multistatus,
                b"response" => Name::Response,
                b"href" => Name::Href,
                b"propstat" => Name::Propstat,
                b"status" => Name::Status,
                b"prop" => Name::Prop,
                b"resourcetype" => Name::ResourceType,
                b"collection" => Name::Collection,
                b"getcontentlength" => Name::ContentLength,
                b"getlastmodified" => Name::LastModified,
                b"creationdate" => Name::CreationDate,
                b"getetag" => Name::Etag,
                b"getcontenttype" => Name::ContentType,
                _ => Name::Other,
            },
            _ => Name::Other,
        }
    }

    /// Whether the text of this element is read (elsewhere text is checked, not kept).
    fn has_value(self) -> bool {
        matches!(
            self,
            Name::Href
                | Name::Status
                | Name::ContentLength
                | Name::LastModified
                | Name::CreationDate
                | Name::Etag
                | Name::ContentType
        )
    }
}

/// Reads a multistatus document; at most `max` responses.
pub(crate) fn parse(input: impl BufRead, max: usize) -> Result<Vec<Response>, ParseError> {
    let mut reader = NsReader::from_reader(input);
    reader.config_mut().trim_text(false);
    let mut buf = Vec::new();
    // The open elements.
    let mut stack: Vec<Name> = Vec::new();
    let mut out = Vec::new();
    let mut response: Option<Response> = None;
    let mut propstat: Option<PropStat> = None;
    let mut text = String::new();
    let mut saw_root = false;
    loop {
        buf.clear();
        let (ns, event) = reader
            .read_resolved_event_into(&mut buf)
            .map_err(|e| match e {
                quick_xml::Error::Io(io) => ParseError::Read(SourceError::from_io(&io)),
                e => ParseError::Bad(e.to_string()),
            })?;
        // Text is kept only inside an element whose value is read.
        let keep = stack.last().is_some_and(|n| n.has_value());
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let name = Name::of(&ns, e.local_name().as_ref());
                let empty = matches!(event, Event::Empty(_));
                if stack.is_empty() {
                    if name != Name::Multistatus {
                        return Err(ParseError::Bad("the root is not DAV:multistatus".into()));
                    }
                    saw_root = true;
                }
                match (stack.last(), name) {
                    (Some(Name::Multistatus), Name::Response) => {
                        if out.len() == max {
                            return Err(ParseError::TooMany);
                        }
                        response = Some(Response::default());
                    }
                    (Some(Name::Response), Name::Propstat) => propstat = Some(PropStat::default()),
                    (Some(Name::ResourceType), Name::Collection) => {
                        if let Some(p) = propstat.as_mut() {
                            p.props.is_collection = true;
                        }
                    }
                    _ => {}
                }
                text.clear();
                if !empty {
                    stack.push(name);
                }
            }
            Event::End(_) => {
                let name = stack.pop().unwrap_or(Name::Other);
                let value = || Some(text.trim().to_owned());
                match (stack.last(), name) {
                    (Some(Name::Multistatus), Name::Response) => {
                        if let Some(r) = response.take() {
                            if r.href.is_empty() {
                                return Err(ParseError::Bad("a response without href".into()));
                            }
                            out.push(r);
                        }
                    }
                    (Some(Name::Response), Name::Href) => {
                        if let Some(r) = response.as_mut() {
                            r.href = text.trim().to_owned();
                        }
                    }
                    (Some(Name::Propstat), Name::Status) => {
                        if let Some(p) = propstat.as_mut() {
                            p.status_ok = Some(status_is_2xx(&text));
                        }
                    }
                    (Some(Name::Response), Name::Propstat) => {
                        if let (Some(r), Some(p)) = (response.as_mut(), propstat.take()) {
                            if p.status_ok != Some(false) {
                                merge(r, p.props);
                            }
                        }
                    }
                    (Some(Name::Prop), prop) => {
                        if let Some(p) = propstat.as_mut() {
                            let props = &mut p.props;
                            match prop {
                                Name::ContentLength => props.content_length = value(),
                                Name::LastModified => props.last_modified = value(),
                                Name::CreationDate => props.creation_date = value(),
                                Name::Etag => props.etag = value(),
                                Name::ContentType => props.content_type = value(),
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
                text.clear();
            }
            Event::Text(t) => {
                let t = t
                    .decode()
                    .map_err(|e| ParseError::Bad(format!("text: {e}")))?;
                if keep {
                    text.push_str(&t);
                }
            }
            Event::CData(t) => {
                let t = t
                    .decode()
                    .map_err(|e| ParseError::Bad(format!("CDATA: {e}")))?;
                if keep {
                    text.push_str(&t);
                }
            }
            Event::GeneralRef(r) => {
                if r.is_char_ref() {
                    match r.resolve_char_ref() {
                        Ok(Some(c)) if keep => text.push(c),
                        Ok(Some(_)) => {}
                        _ => return Err(ParseError::Bad("a bad character reference".into())),
                    }
                } else {
                    let name = r
                        .decode()
                        .map_err(|e| ParseError::Bad(format!("reference: {e}")))?;
                    match quick_xml::escape::resolve_predefined_entity(&name) {
                        Some(s) if keep => text.push_str(s),
                        Some(_) => {}
                        None => {
                            return Err(ParseError::Bad(format!(
                                "a reference to the undeclared entity {name}"
                            )))
                        }
                    }
                }
            }
            Event::DocType(_) => {
                return Err(ParseError::Bad("a document type declaration".into()));
            }
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
            Event::Eof => break,
        }
    }
    if !saw_root || !stack.is_empty() {
        return Err(ParseError::Bad(
            "not a complete multistatus document".into(),
        ));
    }
    Ok(out)
}

/// Whether an HTTP status line (`HTTP/1.1 200 OK`) says 2xx.
fn status_is_2xx(line: &str) -> bool {
    line.split_whitespace()
        .nth(1)
        .is_some_and(|code| code.len() == 3 && code.starts_with('2'))
}

fn merge(into: &mut Response, from: Response) {
    into.is_collection |= from.is_collection;
    into.content_length = into.content_length.take().or(from.content_length);
    into.last_modified = into.last_modified.take().or(from.last_modified);
    into.creation_date = into.creation_date.take().or(from.creation_date);
    into.etag = into.etag.take().or(from.etag);
    into.content_type = into.content_type.take().or(from.content_type);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Vec<Response>, ParseError> {
        parse(s.as_bytes(), 100)
    }

    #[test]
    fn reads_responses_by_namespace_not_prefix() {
        let doc = r#"<?xml version="1.0" encoding="utf-8"?>
<x:multistatus xmlns:x="DAV:" xmlns:o="urn:other">
  <x:response>
    <x:href>/dav/a%20b/</x:href>
    <x:propstat><x:prop>
      <x:resourcetype><x:collection/></x:resourcetype>
      <x:getlastmodified>Sun, 06 Nov 1994 08:49:37 GMT</x:getlastmodified>
    </x:prop><x:status>HTTP/1.1 200 OK</x:status></x:propstat>
    <x:propstat><x:prop><x:getcontentlength/><x:getetag/></x:prop>
      <x:status>HTTP/1.1 404 Not Found</x:status></x:propstat>
  </x:response>
  <response xmlns="DAV:">
    <href>/dav/R&amp;D&#x2122;.txt</href>
    <propstat><prop>
      <resourcetype/>
      <getcontentlength> 12 </getcontentlength>
      <getetag>"abc"</getetag>
      <getcontenttype><![CDATA[text/plain]]></getcontenttype>
      <o:getcontentlength>999</o:getcontentlength>
    </prop><status>HTTP/1.1 200 OK</status></propstat>
  </response>
  <o:response><o:href>/not/dav</o:href></o:response>
</x:multistatus>"#;
        let got = parse_str(doc).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].href, "/dav/a%20b/");
        assert!(got[0].is_collection);
        assert_eq!(
            got[0].last_modified.as_deref(),
            Some("Sun, 06 Nov 1994 08:49:37 GMT")
        );
        assert_eq!(got[0].content_length, None);
        assert_eq!(got[1].href, "/dav/R&D\u{2122}.txt");
        assert!(!got[1].is_collection);
        assert_eq!(got[1].content_length.as_deref(), Some("12"));
        assert_eq!(got[1].etag.as_deref(), Some("\"abc\""));
        assert_eq!(got[1].content_type.as_deref(), Some("text/plain"));
    }

    #[test]
    fn refuses_entities_doctypes_and_garbage() {
        let bomb = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>
<D:multistatus xmlns:D="DAV:"><D:response><D:href>&lol2;</D:href></D:response></D:multistatus>"#;
        assert!(matches!(parse_str(bomb), Err(ParseError::Bad(_))));
        let undeclared = r#"<D:multistatus xmlns:D="DAV:"><D:response><D:href>&x;</D:href></D:response></D:multistatus>"#;
        assert!(matches!(parse_str(undeclared), Err(ParseError::Bad(_))));
        for garbage in [
            "",
            "not xml at all",
            "<html><body>Hello</body></html>",
            r#"<D:multistatus xmlns:D="DAV:"><D:response>"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response></D:propstat></D:multistatus>"#,
            r#"<multistatus><response><href>/a</href></response></multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response></D:response></D:multistatus>"#,
        ] {
            assert!(
                matches!(parse_str(garbage), Err(ParseError::Bad(_))),
                "{garbage}"
            );
        }
    }

    #[test]
    fn stops_at_max_responses() {
        let one = "<D:response><D:href>/a</D:href></D:response>";
        let doc = format!(
            r#"<D:multistatus xmlns:D="DAV:">{}</D:multistatus>"#,
            one.repeat(3)
        );
        assert_eq!(parse(doc.as_bytes(), 3).unwrap().len(), 3);
        assert!(matches!(parse(doc.as_bytes(), 2), Err(ParseError::TooMany)));
    }
}
