//! The rules of secure mail that need no storage: reading a `sendFile` body, the limits, the
//! access levels, and the HTML a message body may carry (docs/mail.md).

use crate::email::Email;
use coffer_errors::{ApiError, ErrorCode};

/// At most this many recipients (to, cc and bcc together) per email.
pub const MAX_RECIPIENTS: usize = 500;
/// At most this many files per email.
pub const MAX_FILES: usize = 100;
/// A subject has at most this many characters (RFC 5322's line limit).
pub const SUBJECT_MAX_CHARS: usize = 998;
/// A body has at most this many bytes.
pub const BODY_MAX_BYTES: usize = 1_000_000;
/// Links expire at most this many days ahead.
pub const EXPIRE_MAX_DAYS: i64 = 3650;

/// Who may open an email through its links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acl {
    /// The link alone.
    NoAuth,
    /// Only recipients who have an account and sign in.
    Internal,
    /// A recipient who signs in, or (with no account) proves the address by a code.
    AnyoneAuth,
    /// The recipient proves the address with a one-time code sent to it (`otp` and
    /// `email_otp` are this level's code step and mean the same here).
    VerifyRecipient,
}

impl Acl {
    pub fn parse(s: &str) -> Option<Acl> {
        Some(match s {
            "no_auth" => Acl::NoAuth,
            "internal" => Acl::Internal,
            "anyone_auth" => Acl::AnyoneAuth,
            "verify_recipient" | "otp" | "email_otp" => Acl::VerifyRecipient,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Acl::NoAuth => "no_auth",
            Acl::Internal => "internal",
            Acl::AnyoneAuth => "anyone_auth",
            Acl::VerifyRecipient => "verify_recipient",
        }
    }
}

/// What `POST /rest/mail/actions/sendFile` (and its `PUT` on a draft) carries.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SendInput {
    /// `(kind, address)`: 0 to, 1 cc, 2 bcc; lower-cased, each address once.
    pub recipients: Vec<(i32, String)>,
    pub files: Vec<String>,
    pub acl: Option<Acl>,
    /// The end of the day given (Unix seconds, UTC).
    pub expire_at: Option<i64>,
    pub draft: bool,
    pub secure_body: bool,
    pub self_copy: bool,
    pub include_fingerprint: bool,
    pub parent_email_id: Option<String>,
    pub kind: String,
    pub body: String,
    pub subject: String,
    pub shared_mailbox_id: Option<String>,
    pub uploading: bool,
}

fn invalid(field: &str, why: &str) -> ApiError {
    ApiError::field(ErrorCode::InvalidParameter, field)
        .with_message(format!("The parameter is invalid ({field}: {why})."))
}

fn too_many(field: &str, why: &str) -> ApiError {
    ApiError::field(ErrorCode::InputExceedsMaxValue, field)
        .with_message(format!("The value exceeds the maximum ({field}: {why})."))
}

/// A `sendFile` body once its fields have their JSON types (the HTTP layer answers those):
/// the values as sent.
#[derive(Debug, Clone, Default)]
pub struct SendRequest {
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub files: Vec<String>,
    pub acl: Option<String>,
    pub expire: Option<String>,
    pub draft: Option<bool>,
    pub secure_body: Option<bool>,
    pub self_copy: Option<bool>,
    pub include_fingerprint: Option<bool>,
    pub uploading: Option<bool>,
    pub kind: Option<String>,
    pub parent_email_id: Option<String>,
    pub subject: Option<String>,
    pub body: Option<String>,
    pub shared_mailbox_id: Option<String>,
}

/// Checks a `sendFile` body. `now` (Unix seconds) judges the expiry date.
pub fn parse_send(req: SendRequest, now: i64) -> Result<SendInput, ApiError> {
    let mut out = SendInput {
        kind: "original".into(),
        ..SendInput::default()
    };
    for (kind, field, list) in [(0, "to", &req.to), (1, "cc", &req.cc), (2, "bcc", &req.bcc)] {
        for (i, s) in list.iter().enumerate() {
            let name = format!("{field}[{i}]");
            let e = Email::parse(s).map_err(|_| invalid(&name, "not an email address"))?;
            let e = e.into_string();
            if !out.recipients.iter().any(|(_, a)| *a == e) {
                out.recipients.push((kind, e));
            }
            if out.recipients.len() > MAX_RECIPIENTS {
                return Err(too_many(field, "at most 500 recipients"));
            }
        }
    }
    if req.files.len() > MAX_FILES {
        return Err(too_many("files", "at most 100 files"));
    }
    for id in req.files {
        if !out.files.contains(&id) {
            out.files.push(id);
        }
    }
    if let Some(a) = req.acl.filter(|a| !a.is_empty()) {
        out.acl = Some(Acl::parse(&a).ok_or_else(|| {
            ApiError::field(ErrorCode::InputNotInList, "acl").with_message(
                "The value is not in the allowed list (acl: verify_recipient, no_auth, otp, internal, anyone_auth, email_otp).",
            )
        })?);
    }
    if let Some(d) = req.expire.filter(|d| !d.is_empty()) {
        let end = parse_expire(&d)?;
        if end < now {
            return Err(ApiError::field(ErrorCode::InputPastDate, "expire"));
        }
        if end > now + EXPIRE_MAX_DAYS * 86_400 {
            return Err(too_many("expire", "at most ten years ahead"));
        }
        out.expire_at = Some(end);
    }
    out.draft = req.draft.unwrap_or(false);
    out.secure_body = req.secure_body.unwrap_or(false);
    out.self_copy = req.self_copy.unwrap_or(false);
    out.include_fingerprint = req.include_fingerprint.unwrap_or(false);
    out.uploading = req.uploading.unwrap_or(false);
    if let Some(t) = req.kind.filter(|t| !t.is_empty()) {
        if !matches!(t.as_str(), "original" | "forward" | "reply" | "resend") {
            return Err(ApiError::field(ErrorCode::InputNotInList, "type"));
        }
        out.kind = t;
    }
    out.parent_email_id = req.parent_email_id.filter(|p| !p.is_empty());
    if let Some(s) = req.subject {
        if s.chars().count() > SUBJECT_MAX_CHARS {
            return Err(too_many("subject", "at most 998 characters"));
        }
        out.subject = s.trim().to_string();
    }
    if let Some(b) = req.body {
        if b.len() > BODY_MAX_BYTES {
            return Err(too_many("body", "at most 1,000,000 bytes"));
        }
        check_body(&b)?;
        out.body = b;
    }
    out.shared_mailbox_id = req.shared_mailbox_id.filter(|m| !m.is_empty());
    Ok(out)
}

/// `YYYY-MM-DD` (or an RFC 3339 time, of whose day) → the last second of that day, UTC.
pub fn parse_expire(s: &str) -> Result<i64, ApiError> {
    let bad = || ApiError::field(ErrorCode::InputInvalidDate, "expire");
    let day = s.get(..10).ok_or_else(bad)?;
    if s.len() > 10
        && time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).is_err()
    {
        return Err(bad());
    }
    let fmt = time::macros::format_description!("[year]-[month]-[day]");
    let d = time::Date::parse(day, &fmt).map_err(|_| bad())?;
    Ok(d.midnight().assume_utc().unix_timestamp() + 86_399)
}

/// The tags a body may carry: formatting only.
const TAGS: &[&str] = &[
    "a",
    "b",
    "blockquote",
    "br",
    "div",
    "em",
    "h1",
    "h2",
    "h3",
    "hr",
    "i",
    "li",
    "ol",
    "p",
    "pre",
    "s",
    "span",
    "strong",
    "sub",
    "sup",
    "u",
    "ul",
];

/// One piece of a body.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    /// An allowed tag: its name, whether it closes, and an `a`'s link.
    Tag {
        name: String,
        close: bool,
        href: Option<String>,
    },
}

fn html_error(why: &str) -> ApiError {
    ApiError::field(ErrorCode::InputHtmlTagsInvalid, "body").with_message(format!(
        "The text contains HTML tags that are not allowed (body: {why})."
    ))
}

/// Splits a body into text and allowed tags; anything else that a browser could read as markup
/// (another tag, an attribute other than an `a`'s `href`, a script URL, a comment, a
/// declaration) is refused, so no body can run script in a recipient's page.
fn pieces(body: &str) -> Result<Vec<Piece<'_>>, ApiError> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find('<') {
        if i > 0 {
            out.push(Piece::Text(&rest[..i]));
        }
        let after = &rest[i + 1..];
        // A `<` not followed by a letter or `/` is text (`a < b`).
        let starts_tag = after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '!' || c == '?');
        if !starts_tag {
            out.push(Piece::Text("<"));
            rest = after;
            continue;
        }
        let end = after
            .find('>')
            .ok_or_else(|| html_error("a tag is not closed"))?;
        let inner = &after[..end];
        if inner.contains('<') {
            return Err(html_error("a tag is not closed"));
        }
        out.push(tag(inner)?);
        rest = &after[end + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

fn tag(inner: &str) -> Result<Piece<'static>, ApiError> {
    let (close, inner) = match inner.strip_prefix('/') {
        Some(r) => (true, r),
        None => (false, inner),
    };
    let inner = inner.trim_end().trim_end_matches('/').trim_end();
    let name_end = inner
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(inner.len());
    let name = inner[..name_end].to_ascii_lowercase();
    if !TAGS.contains(&name.as_str()) {
        return Err(html_error(&format!("<{name}> is not allowed")));
    }
    let attrs = inner[name_end..].trim();
    if close && !attrs.is_empty() {
        return Err(html_error("a closing tag has attributes"));
    }
    let mut href = None;
    if !attrs.is_empty() {
        if name != "a" {
            return Err(html_error("only a link's href is allowed as an attribute"));
        }
        let value = attrs
            .strip_prefix("href")
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix('='))
            .map(str::trim_start)
            .ok_or_else(|| html_error("only a link's href is allowed as an attribute"))?;
        let v = match value.chars().next() {
            Some(q @ ('"' | '\'')) => {
                let body = &value[1..];
                let end = body
                    .find(q)
                    .ok_or_else(|| html_error("an attribute is not closed"))?;
                if !body[end + 1..].trim().is_empty() {
                    return Err(html_error("only a link's href is allowed as an attribute"));
                }
                &body[..end]
            }
            _ => {
                if value.contains(char::is_whitespace) {
                    return Err(html_error("only a link's href is allowed as an attribute"));
                }
                value
            }
        };
        let lower = v.trim().to_ascii_lowercase();
        if !(lower.starts_with("https://")
            || lower.starts_with("http://")
            || lower.starts_with("mailto:"))
            || v.contains(['&', '"', '\'', '<', '>', '`'])
            || v.chars().any(|c| c.is_control() || c.is_whitespace())
        {
            return Err(html_error(
                "a link goes to http, https or mailto addresses only",
            ));
        }
        href = Some(v.trim().to_string());
    }
    Ok(Piece::Tag { name, close, href })
}

/// Refuses a body whose markup goes beyond formatting (422 `ERR_INPUT_HTML_TAGS_INVALID`).
pub fn check_body(body: &str) -> Result<(), ApiError> {
    pieces(body).map(|_| ())
}

/// The host a link goes to (`https://host/...`, `mailto:who@host`), lower-cased, without `www.`.
fn link_host(href: &str) -> String {
    let lower = href.trim().to_ascii_lowercase();
    let rest = if let Some(r) = lower.strip_prefix("mailto:") {
        r.rsplit_once('@').map_or(r, |(_, h)| h)
    } else {
        let r = lower
            .strip_prefix("https://")
            .or_else(|| lower.strip_prefix("http://"))
            .unwrap_or(&lower);
        let r = r.split(['/', '?', '#']).next().unwrap_or_default();
        r.rsplit_once('@').map_or(r, |(_, h)| h)
    };
    let host = rest.split([':', '?', '>']).next().unwrap_or_default();
    host.strip_prefix("www.").unwrap_or(host).to_string()
}

/// The host a link's text names, when the text reads as an address (`example.com`,
/// `https://example.com/x`, `who@example.com`); none for ordinary words.
fn named_host(text: &str) -> Option<String> {
    let t = text.trim();
    if t.is_empty() || t.contains(char::is_whitespace) {
        return None;
    }
    let lower = t.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:")
    {
        return Some(link_host(&lower));
    }
    let head = lower.split(['/', '?', '#']).next().unwrap_or_default();
    let head = head.rsplit_once('@').map_or(head, |(_, h)| h);
    let host = head.split(':').next().unwrap_or_default();
    let (_, tld) = host.rsplit_once('.')?;
    let looks_like_host = !tld.is_empty()
        && tld.chars().all(|c| c.is_ascii_alphabetic())
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    looks_like_host.then(|| host.strip_prefix("www.").unwrap_or(host).to_string())
}

/// Refuses a body with a link whose text names another host than the one the link goes to
/// (422 `ERR_INPUT_HYPERLINK` naming `field`): the text of a link is what a reader trusts.
/// Markup beyond formatting is refused as [`check_body`] refuses it.
pub fn check_hyperlinks(body: &str, field: &str) -> Result<(), ApiError> {
    let mut open: Option<(String, String)> = None;
    for p in pieces(body)? {
        match p {
            Piece::Tag {
                name,
                close: false,
                href: Some(h),
            } if name == "a" => open = Some((link_host(&h), String::new())),
            Piece::Tag {
                name, close: true, ..
            } if name == "a" => {
                if let Some((host, text)) = open.take() {
                    if named_host(&text).is_some_and(|shown| shown != host) {
                        return Err(ApiError::field(ErrorCode::InputHyperlink, field));
                    }
                }
            }
            Piece::Text(t) => {
                if let Some((_, text)) = open.as_mut() {
                    text.push_str(t);
                }
            }
            Piece::Tag { .. } => {}
        }
    }
    Ok(())
}

/// Escapes text for HTML.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A checked body as HTML, rebuilt from its pieces: text escaped (line breaks kept), each
/// allowed tag written anew with nothing but its name and a link's checked address. A body that
/// fails [`check_body`] shows as escaped text.
pub fn body_html(body: &str) -> String {
    let Ok(ps) = pieces(body) else {
        return escape(body).replace('\n', "<br>");
    };
    let mut out = String::with_capacity(body.len() + 16);
    for p in ps {
        match p {
            Piece::Text(t) => out.push_str(&escape(t).replace('\n', "<br>")),
            Piece::Tag { name, close, href } => {
                out.push('<');
                if close {
                    out.push('/');
                }
                out.push_str(&name);
                if let Some(h) = href {
                    out.push_str(" href=\"");
                    out.push_str(&escape(&h));
                    out.push_str("\" rel=\"noopener noreferrer nofollow\"");
                }
                out.push('>');
            }
        }
    }
    out
}

/// A body as plain text (its tags dropped), for the message an outside recipient receives.
pub fn body_text(body: &str) -> String {
    match pieces(body) {
        Ok(ps) => ps
            .into_iter()
            .map(|p| match p {
                Piece::Text(t) => t.to_string(),
                Piece::Tag { name, close, .. } => match (name.as_str(), close) {
                    ("br", _) | ("p", true) | ("div", true) | ("li", true) => "\n".into(),
                    _ => String::new(),
                },
            })
            .collect(),
        Err(_) => body.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_790_000_000; // 2026-09-21

    fn to(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn reads_recipients_once_each_in_order() {
        let s = parse_send(
            SendRequest {
                to: to(&["A@x.io", "b@x.io"]),
                cc: to(&["a@x.io", "c@x.io"]),
                bcc: to(&["d@x.io"]),
                ..Default::default()
            },
            NOW,
        )
        .unwrap();
        assert_eq!(
            s.recipients,
            vec![
                (0, "a@x.io".to_string()),
                (0, "b@x.io".into()),
                (1, "c@x.io".into()),
                (2, "d@x.io".into())
            ]
        );
        assert_eq!(s.kind, "original");
        assert!(!s.draft);
    }

    // The JSON types of the body are the HTTP layer's (its sendFile tests run every case of
    // this kind through the body and these checks).
    #[test]
    fn refuses_bad_values_with_the_catalogue_codes() {
        let code = |r: SendRequest| parse_send(r, NOW).unwrap_err().code;
        let text = |s: &str| Some(s.to_string());
        assert_eq!(
            code(SendRequest {
                to: to(&["nope"]),
                ..Default::default()
            }),
            ErrorCode::InvalidParameter
        );
        assert_eq!(
            code(SendRequest {
                acl: text("public"),
                ..Default::default()
            }),
            ErrorCode::InputNotInList
        );
        for (expire, c) in [
            ("2020-01-01", ErrorCode::InputPastDate),
            ("tomorrow", ErrorCode::InputInvalidDate),
            ("2026-13-01", ErrorCode::InputInvalidDate),
        ] {
            assert_eq!(
                code(SendRequest {
                    expire: text(expire),
                    ..Default::default()
                }),
                c,
                "{expire}"
            );
        }
        assert_eq!(
            code(SendRequest {
                subject: Some("x".repeat(999)),
                ..Default::default()
            }),
            ErrorCode::InputExceedsMaxValue
        );
        let many: Vec<String> = (0..501).map(|i| format!("u{i}@x.io")).collect();
        assert_eq!(
            code(SendRequest {
                to: many,
                ..Default::default()
            }),
            ErrorCode::InputExceedsMaxValue
        );
        assert_eq!(
            code(SendRequest {
                files: (0..101).map(|i| format!("f{i}")).collect(),
                ..Default::default()
            }),
            ErrorCode::InputExceedsMaxValue
        );
        assert_eq!(
            code(SendRequest {
                kind: text("spam"),
                ..Default::default()
            }),
            ErrorCode::InputNotInList
        );
    }

    #[test]
    fn an_expiry_is_the_end_of_its_day() {
        let at = |d: &str| {
            parse_send(
                SendRequest {
                    expire: Some(d.to_string()),
                    ..Default::default()
                },
                NOW,
            )
            .unwrap()
            .expire_at
        };
        assert_eq!(at("2026-09-22"), Some(1_790_121_599));
        assert!(at("2026-09-21").unwrap() >= NOW);
    }

    #[test]
    fn bodies_with_formatting_pass_and_render_rebuilt() {
        let b = "Hello <b>Ann</b>,<br/>see <a href=\"https://x.io/a?b=1\">this</a>.\n1 < 2";
        check_body(b).unwrap();
        assert_eq!(
            body_html(b),
            "Hello <b>Ann</b>,<br>see <a href=\"https://x.io/a?b=1\" rel=\"noopener noreferrer nofollow\">this</a>.<br>1 &lt; 2"
        );
        assert_eq!(body_text(b), "Hello Ann,\nsee this.\n1 < 2");
    }

    #[test]
    fn bodies_that_could_run_script_are_refused() {
        for b in [
            "<script>alert(1)</script>",
            "<img src=x onerror=alert(1)>",
            "<b onclick=\"x()\">hi</b>",
            "<a href=\"javascript:alert(1)\">x</a>",
            "<a href=\" javascript:alert(1)\">x</a>",
            "<a href=https://x.io onmouseover=y>x</a>",
            "<svg/onload=alert(1)>",
            "<!-- x --><script>",
            "<iframe src=https://x.io>",
            "<a href=\"https://x.io\"\"onclick=x>y</a>",
            "<b <script>>",
            "<style>body{}</style>",
            "<a href='data:text/html,x'>x</a>",
            "<p",
        ] {
            assert_eq!(
                check_body(b).unwrap_err().code,
                ErrorCode::InputHtmlTagsInvalid,
                "{b}"
            );
            assert!(!body_html(b).contains("<s"), "{b}");
        }
    }

    #[test]
    fn acl_names() {
        assert_eq!(Acl::parse("otp"), Some(Acl::VerifyRecipient));
        assert_eq!(Acl::parse("no_auth").unwrap().as_str(), "no_auth");
        assert_eq!(Acl::parse("x"), None);
    }

    #[test]
    fn a_link_whose_text_names_another_host_is_refused() {
        let ok = [
            "plain text",
            "<a href=\"https://example.com/x\">example.com</a>",
            "<a href=\"https://www.example.com\">https://example.com/other</a>",
            "<a href=\"https://evil.io\">our <b>portal</b></a>",
            "<a href=\"mailto:ann@example.com\">ann@example.com</a>",
        ];
        for b in ok {
            assert!(check_hyperlinks(b, "body").is_ok(), "{b}");
        }
        let bad = [
            "<a href=\"https://evil.io/login\">bank.example.com</a>",
            "<a href=\"https://evil.io\">https://bank.example.com</a>",
            "see <a href='http://x.evil.io'>www.bank.com/login</a>",
        ];
        for b in bad {
            let e = check_hyperlinks(b, "body").unwrap_err();
            assert_eq!(
                (e.code, e.field.as_deref()),
                (ErrorCode::InputHyperlink, Some("body")),
                "{b}"
            );
        }
        assert_eq!(
            check_hyperlinks("<script>", "body").unwrap_err().code,
            ErrorCode::InputHtmlTagsInvalid
        );
    }
}
