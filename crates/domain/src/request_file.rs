//! Request-file links as pure rules (docs/request-files.md): the limits of a request, the name
//! an upload takes in the requestor's folder, the extensions a link refuses, and the shape of a
//! reference.

use coffer_errors::{ApiError, ErrorCode};

/// Characters of a subject, as for mail.
pub const SUBJECT_MAX_CHARS: usize = 998;
/// Recipients of one request (one link each).
pub const MAX_RECIPIENTS: usize = 100;
/// Files one request may offer to the recipient.
pub const MAX_SOURCES: usize = 100;
/// `actionId`: the offered files may be viewed only.
pub const ACTION_VIEW: i64 = 1;
/// `actionId`: the offered files may be viewed and downloaded.
pub const ACTION_DOWNLOAD: i64 = 2;
/// The length of a reference: 32 random bytes in URL-safe base64 without padding.
pub const REF_LEN: usize = 43;

/// Whether `s` has the shape of a reference. Anything else is refused before any lookup, with
/// the same answer as an unknown one.
pub fn is_reference(s: &str) -> bool {
    s.len() == REF_LEN
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// 422 `ERR_INVALID_PARAMETER` naming `field`, saying why.
pub fn invalid(field: &str, why: &str) -> ApiError {
    ApiError::field(ErrorCode::InvalidParameter, field)
        .with_message(format!("The parameter is invalid ({field}: {why})."))
}

/// Checks a request's `count` (files each recipient may send) against the maximum.
pub fn check_count(count: i64, max: i64, field: &str) -> Result<i64, ApiError> {
    if count < 1 || count > max {
        return Err(invalid(field, &format!("from 1 to {max}")));
    }
    Ok(count)
}

/// Checks a subject: 1 to 998 characters once trimmed.
pub fn check_subject(subject: &str) -> Result<String, ApiError> {
    let s = subject.trim();
    if s.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "subject"));
    }
    if s.chars().count() > SUBJECT_MAX_CHARS {
        return Err(invalid("subject", "at most 998 characters"));
    }
    Ok(s.to_string())
}

/// The name an upload takes among the requestor's files: the recipient's name with the
/// uploader's address before the extension (`report (ann@example.com).pdf`), so that files from
/// different people never become versions of each other while one person's second upload of a
/// name does.
pub fn stored_name(name: &str, uploader: &str) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => {
            format!("{stem} ({uploader}).{ext}")
        }
        _ => format!("{name} ({uploader})"),
    }
}

/// The name the uploader gave, from the name [`stored_name`] made of it.
pub fn given_name(stored: &str, uploader: &str) -> String {
    let tag = format!(" ({uploader})");
    match stored.rfind(&tag) {
        Some(i) => format!("{}{}", &stored[..i], &stored[i + tag.len()..]),
        None => stored.to_string(),
    }
}

/// The extensions of a comma- or space-separated setting, lower-cased, without dots.
pub fn parse_extensions(setting: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in setting.split([',', ' ', ';']) {
        let e = e.trim().trim_start_matches('.').to_ascii_lowercase();
        if !e.is_empty() && !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

/// Refuses a name whose extension is on the list (403 `ERR_ENTITY_RESTRICTED_EXTENSION`).
pub fn check_extension(name: &str, excluded: &[String]) -> Result<(), ApiError> {
    let Some((_, ext)) = name.rsplit_once('.') else {
        return Ok(());
    };
    let ext = ext.to_ascii_lowercase();
    if excluded.contains(&ext) {
        return Err(
            ApiError::field(ErrorCode::EntityRestrictedExtension, "filename")
                .with_message(format!("Files ending in .{ext} are not accepted here.")),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_has_one_shape() {
        let good = "A".repeat(42) + "_";
        assert!(is_reference(&good));
        assert!(!is_reference(&"A".repeat(42)));
        assert!(!is_reference(&("A".repeat(42) + "=")));
        assert!(!is_reference(&("A".repeat(42) + "/")));
    }

    #[test]
    fn count_and_subject_limits() {
        assert!(check_count(0, 100, "count").is_err());
        assert_eq!(check_count(1, 100, "count").unwrap(), 1);
        assert_eq!(check_count(100, 100, "count").unwrap(), 100);
        let e = check_count(101, 100, "count").unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            (ErrorCode::InvalidParameter, Some("count"))
        );
        assert_eq!(check_subject(" Q3 ").unwrap(), "Q3");
        assert_eq!(
            check_subject(" ").unwrap_err().code,
            ErrorCode::InputRequired
        );
        assert!(check_subject(&"é".repeat(998)).is_ok());
        assert_eq!(
            check_subject(&"é".repeat(999)).unwrap_err().code,
            ErrorCode::InvalidParameter
        );
    }

    #[test]
    fn an_upload_carries_its_uploader_before_the_extension() {
        assert_eq!(stored_name("a.pdf", "x@y.io"), "a (x@y.io).pdf");
        assert_eq!(stored_name("a.tar.gz", "x@y.io"), "a.tar (x@y.io).gz");
        assert_eq!(stored_name("README", "x@y.io"), "README (x@y.io)");
        assert_eq!(stored_name(".env", "x@y.io"), ".env (x@y.io)");
        for n in ["a.pdf", "a.tar.gz", "README", ".env", "b (x@y.io).txt"] {
            assert_eq!(given_name(&stored_name(n, "x@y.io"), "x@y.io"), n);
        }
    }

    #[test]
    fn excluded_extensions_ignore_case_and_dots() {
        let list = parse_extensions(".EXE, bat;;js exe");
        assert_eq!(list, ["exe", "bat", "js"]);
        assert_eq!(
            check_extension("setup.Exe", &list).unwrap_err().code,
            ErrorCode::EntityRestrictedExtension
        );
        assert!(check_extension("report.pdf", &list).is_ok());
        assert!(check_extension("exe", &list).is_ok());
    }
}
