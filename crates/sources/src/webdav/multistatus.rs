//! Reading a PROPFIND answer (`DAV:multistatus`, RFC 4918 §14.16): an XML reader specialised
//! for that one document, over the whole body held in memory (the caller caps its bytes and the
//! number of responses).
//!
//! A listing of a thousand entries is tens of thousands of elements, and a general XML reader's
//! cost per element (building events, resolving each name's namespace, decoding every run of
//! text) was most of the CPU a listing took. So this reader works on the bytes: it finds `<` and
//! `&` with `memchr`, tells apart only the `DAV:` elements it reads (by local name, compared as
//! bytes, once each element's prefix is found among the namespace declarations in scope, each of
//! which knows whether it binds `DAV:`), skips everything else without decoding it, and lends
//! the values it keeps as slices of the body: only a value holding an entity reference or a
//! CDATA section is copied.
//!
//! It is still an XML reader for what WebDAV servers send: elements are matched by namespace
//! URI and local name, never by prefix (default and prefixed namespaces, redeclared in any
//! element); text may hold the five predefined entities, character references and CDATA
//! sections; comments and processing instructions are skipped; end tags must match their start
//! tags; the body must be UTF-8. A document type declaration is refused outright (no entity is
//! ever declared, so none is expanded: the "billion laughs" cannot happen), and so is a
//! reference to any entity but the five predefined ones. Nesting and namespace declarations are
//! bounded, so a hostile body costs at most its (capped) size.

use std::borrow::Cow;

use memchr::{memchr, memchr2, memmem};

const DAV: &str = "DAV:";

/// The deepest nesting read (a multistatus needs 6 levels; a property's value a few more).
const MAX_DEPTH: usize = 256;

/// The most namespace declarations in scope at once.
const MAX_BINDINGS: usize = 1024;

/// One `response`: its href and the properties of its successful propstats, as slices of the
/// body where they hold no entity reference or CDATA section.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Response<'a> {
    pub href: Cow<'a, str>,
    pub is_collection: bool,
    pub content_length: Option<Cow<'a, str>>,
    pub last_modified: Option<Cow<'a, str>>,
    pub creation_date: Option<Cow<'a, str>>,
    pub etag: Option<Cow<'a, str>>,
    pub content_type: Option<Cow<'a, str>>,
}

/// Why a document was not read.
#[derive(Debug)]
pub(crate) enum ParseError {
    /// More responses than `max`.
    TooMany,
    /// Not a multistatus document Coffer reads (the text says why, for the log).
    Bad(String),
}

fn bad<T>(why: &str) -> Result<T, ParseError> {
    Err(ParseError::Bad(why.to_owned()))
}

/// The properties being read within one propstat.
#[derive(Default)]
struct PropStat<'a> {
    status_ok: Option<bool>,
    props: Response<'a>,
}

/// The elements the reader tells apart: the DAV: names it reads, and every other element
/// (another namespace, or a DAV: name it has no use for) as `Other`.
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
    fn of(dav: bool, local: &[u8]) -> Name {
        if !dav {
            return Name::Other;
        }
        match local {
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
        }
    }
}

/// A namespace declaration in scope: its prefix ("" for the default namespace) and whether it
/// binds `DAV:`, decided once where it is declared.
struct Binding<'a> {
    prefix: &'a str,
    dav: bool,
}

/// An open element: its name as written (to match its end tag), what it is, and the number of
/// namespace declarations in scope before it.
struct Open<'a> {
    qname: &'a str,
    name: Name,
    bindings: usize,
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// The text of a value without the XML white space around it.
fn trim(s: &str) -> &str {
    s.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'))
}

/// What an entity or character reference stands for.
enum Ref {
    Text(&'static str),
    Char(char),
}

/// The text of an entity or character reference (`name` between `&` and `;`); `None` for
/// anything but the five predefined entities and a reference to a character XML allows.
fn reference(name: &str) -> Option<Ref> {
    Some(Ref::Text(match name {
        "lt" => "<",
        "gt" => ">",
        "amp" => "&",
        "apos" => "'",
        "quot" => "\"",
        _ => {
            let number = name.strip_prefix('#')?;
            let (digits, radix) = match number.strip_prefix('x') {
                Some(hex) => (hex, 16),
                None => (number, 10),
            };
            // Digits only (`from_str_radix` would take a sign too).
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let code = u32::from_str_radix(digits, radix).ok()?;
            return char::from_u32(code).filter(|c| *c != '\0').map(Ref::Char);
        }
    }))
}

/// Checks every reference in a run of text (or an attribute's value) and, when `out` is given,
/// appends the text with each reference replaced.
fn references(mut text: &str, mut out: Option<&mut String>) -> Result<(), ParseError> {
    while let Some(at) = memchr(b'&', text.as_bytes()) {
        let rest = &text[at + 1..];
        let Some(end) = memchr(b';', rest.as_bytes()) else {
            return bad("a reference without ';'");
        };
        let Some(r) = reference(&rest[..end]) else {
            let name: String = rest[..end].chars().take(32).collect();
            return Err(ParseError::Bad(format!(
                "a reference to the undeclared entity {name}"
            )));
        };
        if let Some(out) = out.as_deref_mut() {
            out.push_str(&text[..at]);
            match r {
                Ref::Text(t) => out.push_str(t),
                Ref::Char(c) => out.push(c),
            }
        }
        text = &rest[end + 1..];
    }
    if let Some(out) = out {
        out.push_str(text);
    }
    Ok(())
}

/// The value of an element's content `raw` (the text since its last child tag): borrowed when
/// it holds no reference, CDATA section, comment or processing instruction.
fn value(raw: &str) -> Result<Cow<'_, str>, ParseError> {
    if memchr2(b'&', b'<', raw.as_bytes()).is_none() {
        return Ok(Cow::Borrowed(trim(raw)));
    }
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(lt) = memchr(b'<', rest.as_bytes()) {
        references(&rest[..lt], Some(&mut out))?;
        let markup = &rest[lt..];
        // The reader has checked that each of these is closed.
        rest = if let Some(cdata) = markup.strip_prefix("<![CDATA[") {
            let end = memmem::find(cdata.as_bytes(), b"]]>").unwrap_or(cdata.len());
            out.push_str(&cdata[..end]);
            &cdata[(end + 3).min(cdata.len())..]
        } else if markup.starts_with("<!--") {
            let end = memmem::find(markup.as_bytes(), b"-->").map_or(markup.len(), |e| e + 3);
            &markup[end..]
        } else {
            let end = memmem::find(markup.as_bytes(), b"?>").map_or(markup.len(), |e| e + 2);
            &markup[end..]
        };
    }
    references(rest, Some(&mut out))?;
    Ok(Cow::Owned(trim(&out).to_owned()))
}

/// Whether an HTTP status line (`HTTP/1.1 200 OK`) says 2xx.
fn status_is_2xx(line: &str) -> bool {
    line.split_whitespace()
        .nth(1)
        .is_some_and(|code| code.len() == 3 && code.starts_with('2'))
}

fn merge<'a>(into: &mut Response<'a>, from: Response<'a>) {
    into.is_collection |= from.is_collection;
    into.content_length = into.content_length.take().or(from.content_length);
    into.last_modified = into.last_modified.take().or(from.last_modified);
    into.creation_date = into.creation_date.take().or(from.creation_date);
    into.etag = into.etag.take().or(from.etag);
    into.content_type = into.content_type.take().or(from.content_type);
}

/// A start tag's name and attributes: the namespace declarations among them are pushed onto
/// `bindings`. Answers the name, whether the tag is empty (`/>`) and where it ends.
fn start_tag<'a>(
    doc: &'a str,
    at: usize,
    bindings: &mut Vec<Binding<'a>>,
) -> Result<(&'a str, bool, usize), ParseError> {
    let b = doc.as_bytes();
    let mut i = at + 1;
    while i < b.len() && !is_space(b[i]) && b[i] != b'>' && b[i] != b'/' {
        i += 1;
    }
    let qname = &doc[at + 1..i];
    if qname.is_empty() || qname.contains(['<', '=', '"', '\'', '&']) {
        return bad("a malformed start tag");
    }
    loop {
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        match b.get(i) {
            None => return bad("a start tag without its end"),
            Some(b'>') => return Ok((qname, false, i + 1)),
            Some(b'/') => {
                return if b.get(i + 1) == Some(&b'>') {
                    Ok((qname, true, i + 2))
                } else {
                    bad("a malformed start tag")
                };
            }
            Some(_) => {}
        }
        let name_at = i;
        while i < b.len() && !is_space(b[i]) && !matches!(b[i], b'=' | b'>' | b'/' | b'<') {
            i += 1;
        }
        let attr = &doc[name_at..i];
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        if attr.is_empty() || b.get(i) != Some(&b'=') {
            return bad("an attribute without a value");
        }
        i += 1;
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        let quote = match b.get(i) {
            Some(&q @ (b'"' | b'\'')) => q,
            _ => return bad("an attribute value without quotes"),
        };
        let Some(len) = memchr(quote, &b[i + 1..]) else {
            return bad("an attribute value without its end");
        };
        let raw = &doc[i + 1..i + 1 + len];
        i += len + 2;
        if memchr(b'<', raw.as_bytes()).is_some() {
            return bad("'<' in an attribute value");
        }
        let prefix = if attr == "xmlns" {
            ""
        } else if let Some(p) = attr.strip_prefix("xmlns:") {
            if p.is_empty() {
                return bad("a namespace declaration without a prefix");
            }
            p
        } else {
            if memchr(b'&', raw.as_bytes()).is_some() {
                references(raw, None)?;
            }
            continue;
        };
        let dav = if memchr(b'&', raw.as_bytes()).is_some() {
            let mut uri = String::new();
            references(raw, Some(&mut uri))?;
            uri == DAV
        } else {
            raw == DAV
        };
        if bindings.len() == MAX_BINDINGS {
            return bad("too many namespace declarations");
        }
        bindings.push(Binding { prefix, dav });
    }
}

/// Whether the element named `qname` is in the `DAV:` namespace, by the declarations in scope
/// (the innermost first), and its local name.
fn resolve<'a>(qname: &'a str, bindings: &[Binding<'_>]) -> (bool, &'a str) {
    let (prefix, local) = qname.split_once(':').unwrap_or(("", qname));
    // An undeclared prefix (or no default namespace) is no namespace, so not `DAV:`.
    let dav = bindings
        .iter()
        .rev()
        .find(|b| b.prefix == prefix)
        .is_some_and(|b| b.dav);
    (dav, local)
}

/// Reads a multistatus document; at most `max` responses.
pub(crate) fn parse(body: &[u8], max: usize) -> Result<Vec<Response<'_>>, ParseError> {
    let Ok(doc) = std::str::from_utf8(body) else {
        return bad("not UTF-8");
    };
    let doc = doc.strip_prefix('\u{feff}').unwrap_or(doc);
    let b = doc.as_bytes();
    let mut stack: Vec<Open<'_>> = Vec::with_capacity(16);
    let mut bindings: Vec<Binding<'_>> = Vec::with_capacity(8);
    let mut out = Vec::new();
    let mut response: Option<Response<'_>> = None;
    let mut propstat: Option<PropStat<'_>> = None;
    let mut saw_root = false;
    // Where the text of the innermost open element starts: after the last start or end tag.
    let mut since = 0;
    let mut pos = 0;
    loop {
        let lt = memchr(b'<', &b[pos..]).map_or(b.len(), |i| pos + i);
        let text = &doc[pos..lt];
        if !text.is_empty() {
            if stack.is_empty() {
                if !text.bytes().all(is_space) {
                    return bad("text outside the root element");
                }
            } else if memchr(b'&', text.as_bytes()).is_some() {
                references(text, None)?;
            }
        }
        if lt == b.len() {
            break;
        }
        let rest = &doc[lt..];
        match b.get(lt + 1) {
            Some(b'/') => {
                let Some(gt) = memchr(b'>', &b[lt..]) else {
                    return bad("an end tag without its end");
                };
                let qname = doc[lt + 2..lt + gt].trim_end_matches([' ', '\t', '\r', '\n']);
                let Some(open) = stack.pop() else {
                    return bad("an end tag without a start");
                };
                if open.qname != qname {
                    return bad("an end tag that does not match its start");
                }
                bindings.truncate(open.bindings);
                match (stack.last().map(|o| o.name), open.name) {
                    (Some(Name::Multistatus), Name::Response) => {
                        if let Some(r) = response.take() {
                            if r.href.is_empty() {
                                return bad("a response without href");
                            }
                            out.push(r);
                        }
                    }
                    (Some(Name::Response), Name::Href) => {
                        if let Some(r) = response.as_mut() {
                            r.href = value(&doc[since..lt])?;
                        }
                    }
                    (Some(Name::Propstat), Name::Status) => {
                        if let Some(p) = propstat.as_mut() {
                            p.status_ok = Some(status_is_2xx(&value(&doc[since..lt])?));
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
                            let slot = match prop {
                                Name::ContentLength => Some(&mut props.content_length),
                                Name::LastModified => Some(&mut props.last_modified),
                                Name::CreationDate => Some(&mut props.creation_date),
                                Name::Etag => Some(&mut props.etag),
                                Name::ContentType => Some(&mut props.content_type),
                                _ => None,
                            };
                            if let Some(slot) = slot {
                                *slot = Some(value(&doc[since..lt])?);
                            }
                        }
                    }
                    _ => {}
                }
                pos = lt + gt + 1;
                since = pos;
            }
            Some(b'!') => {
                if let Some(cdata) = rest.strip_prefix("<![CDATA[") {
                    if stack.is_empty() {
                        return bad("CDATA outside the root element");
                    }
                    let Some(end) = memmem::find(cdata.as_bytes(), b"]]>") else {
                        return bad("a CDATA section without its end");
                    };
                    pos = lt + 9 + end + 3;
                } else if rest.starts_with("<!--") {
                    let Some(end) = memmem::find(&b[lt + 4..], b"-->") else {
                        return bad("a comment without its end");
                    };
                    pos = lt + 4 + end + 3;
                } else if rest.starts_with("<!DOCTYPE") {
                    return bad("a document type declaration");
                } else {
                    return bad("a malformed declaration");
                }
            }
            Some(b'?') => {
                let Some(end) = memmem::find(&b[lt + 2..], b"?>") else {
                    return bad("a processing instruction without its end");
                };
                pos = lt + 2 + end + 2;
            }
            _ => {
                let mark = bindings.len();
                let (qname, empty, end) = start_tag(doc, lt, &mut bindings)?;
                let (dav, local) = resolve(qname, &bindings);
                let name = Name::of(dav, local.as_bytes());
                let parent = match stack.last() {
                    Some(o) => Some(o.name),
                    None if saw_root => return bad("a second root element"),
                    None if name != Name::Multistatus => {
                        return bad("the root is not DAV:multistatus")
                    }
                    None => {
                        saw_root = true;
                        None
                    }
                };
                match (parent, name) {
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
                if empty {
                    bindings.truncate(mark);
                } else {
                    if stack.len() == MAX_DEPTH {
                        return bad("elements nested too deep");
                    }
                    stack.push(Open {
                        qname,
                        name,
                        bindings: mark,
                    });
                }
                pos = end;
                since = end;
            }
        }
    }
    if !saw_root || !stack.is_empty() {
        return bad("not a complete multistatus document");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Vec<Response<'_>>, ParseError> {
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
    fn values_without_references_are_borrowed_and_the_others_decoded() {
        let doc = r#"<D:multistatus xmlns:D="DAV:"><D:response>
  <D:href>/dav/plain.txt</D:href>
  <D:propstat><D:prop>
    <D:getetag>&quot;e1&quot;</D:getetag>
    <D:getcontenttype>text/<![CDATA[x<y>&z]]><!-- a comment -->&#65;<?pi x?></D:getcontenttype>
    <D:getlastmodified>
      Sun, 06 Nov 1994 08:49:37 GMT
    </D:getlastmodified>
  </D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>
</D:response></D:multistatus>"#;
        let got = parse_str(doc).unwrap();
        assert!(matches!(got[0].href, Cow::Borrowed("/dav/plain.txt")));
        assert!(matches!(
            got[0].last_modified,
            Some(Cow::Borrowed("Sun, 06 Nov 1994 08:49:37 GMT"))
        ));
        assert_eq!(got[0].etag.as_deref(), Some("\"e1\""));
        assert_eq!(got[0].content_type.as_deref(), Some("text/x<y>&zA"));
    }

    #[test]
    fn any_prop_order_and_only_successful_propstats() {
        // Properties in any order, split over propstats; a 404 propstat's values are ignored
        // even when it comes first, and a propstat without status counts.
        let doc = r#"<multistatus xmlns="DAV:"><response>
  <propstat><status>HTTP/1.1 404 Not Found</status>
    <prop><getcontentlength>7</getcontentlength><getetag>"gone"</getetag></prop></propstat>
  <propstat><prop><getetag>"e"</getetag><getcontenttype>a/b</getcontenttype>
    <resourcetype></resourcetype><getcontentlength>42</getcontentlength></prop></propstat>
  <href>http://dav.example.com/dav/x.bin</href>
</response></multistatus>"#;
        let got = parse_str(doc).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].href, "http://dav.example.com/dav/x.bin");
        assert_eq!(got[0].content_length.as_deref(), Some("42"));
        assert_eq!(got[0].etag.as_deref(), Some("\"e\""));
        assert_eq!(got[0].content_type.as_deref(), Some("a/b"));
        assert!(!got[0].is_collection);
    }

    #[test]
    fn namespaces_are_scoped_to_their_element() {
        // `D` is DAV: on the root, rebound to another namespace inside the second response, and
        // the default namespace is DAV: only where declared; attributes in any quotes.
        let doc = r#"<?xml version='1.0'?>
<!-- before the root -->
<D:multistatus xmlns:D='DAV:' >
  <D:response><D:href>/a</D:href></D:response>
  <D:response xmlns:D="urn:not-dav"><D:href>/b</D:href></D:response>
  <response xmlns = "DAV:" other="1 &lt; 2"><href>/c</href></response>
  <response><href>/d</href></response>
  <D:response ><D:href >/e</D:href ></D:response>
  <y:response xmlns:y="DA&#86;:"><y:href>/f</y:href></y:response>
</D:multistatus >
<?pi after the root?>
"#;
        let got = parse_str(doc).unwrap();
        let hrefs: Vec<&str> = got.iter().map(|r| r.href.as_ref()).collect();
        assert_eq!(hrefs, ["/a", "/c", "/e", "/f"]);
    }

    #[test]
    fn refuses_entities_doctypes_and_garbage() {
        let bomb = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>
<D:multistatus xmlns:D="DAV:"><D:response><D:href>&lol2;</D:href></D:response></D:multistatus>"#;
        assert!(matches!(parse_str(bomb), Err(ParseError::Bad(_))));
        let undeclared = r#"<D:multistatus xmlns:D="DAV:"><D:response><D:href>&x;</D:href></D:response></D:multistatus>"#;
        assert!(matches!(parse_str(undeclared), Err(ParseError::Bad(_))));
        let deep = format!(
            r#"<D:multistatus xmlns:D="DAV:">{}</D:multistatus>"#,
            "<a>".repeat(MAX_DEPTH)
        );
        let many_ns = format!(
            r#"<D:multistatus xmlns:D="DAV:"><a {}/></D:multistatus>"#,
            (0..=MAX_BINDINGS)
                .map(|i| format!("xmlns:p{i}=\"u\""))
                .collect::<Vec<_>>()
                .join(" ")
        );
        for garbage in [
            "",
            "not xml at all",
            "<html><body>Hello</body></html>",
            r#"<D:multistatus xmlns:D="DAV:"><D:response>"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response></D:propstat></D:multistatus>"#,
            r#"<multistatus><response><href>/a</href></response></multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response></D:response></D:multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response><D:href>/a</D:href></D:response></D:multistatus><D:multistatus xmlns:D="DAV:"/>"#,
            r#"<D:multistatus xmlns:D="DAV:"></D:multistatus>trailing"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response><D:href>/a&amp</D:href></D:response></D:multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response><D:href>&#0;</D:href></D:response></D:multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response><D:href>&#xD800;</D:href></D:response></D:multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response><D:href>&#x-41;</D:href></D:response></D:multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response><D:href><![CDATA[/a</D:href></D:response></D:multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"><!-- open"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response a="1></D:response></D:multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response a=1></D:response></D:multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response a></D:response></D:multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response a="<"></D:response></D:multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response/ ></D:multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"><D:response x="&foo;"/></D:multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"><></D:multistatus>"#,
            r#"<D:multistatus xmlns:D="DAV:"></D:multistatus"#,
            r#"<D:multistatus xmlns:D="DAV:"><!ELEMENT x ANY></D:multistatus>"#,
            deep.as_str(),
            many_ns.as_str(),
        ] {
            assert!(
                matches!(parse_str(garbage), Err(ParseError::Bad(_))),
                "{garbage:.200}"
            );
        }
        // Not UTF-8.
        assert!(matches!(
            parse(b"<D:multistatus xmlns:D=\"DAV:\">\xff</D:multistatus>", 10),
            Err(ParseError::Bad(_))
        ));
    }

    #[test]
    fn a_byte_order_mark_and_an_empty_listing_are_read() {
        let doc = "\u{feff}<?xml version=\"1.0\"?><D:multistatus xmlns:D=\"DAV:\"/>";
        assert_eq!(parse_str(doc).unwrap().len(), 0);
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
