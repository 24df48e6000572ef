//! Contacts and external distribution lists: what their request bodies must hold.
//!
//! A contact body `{name, items: [{email}]}` answers every refusal of a field with 422
//! `ERR_INVALID_PARAMETER` naming the field (the one code the interface gives the contact
//! calls), an external-distribution-list body `{emails: [...]}` the usual codes of the field.

use crate::input::is_clean;
use crate::Email;
use coffer_errors::{ApiError, ErrorCode};

/// The longest contact name, in UTF-8 bytes.
pub const NAME_MAX_BYTES: usize = 255;
/// The most addresses one contact holds.
pub const MAX_ITEMS: usize = 100;
/// The most addresses one call adds to or removes from the external distribution lists.
pub const MAX_DL_EMAILS: usize = 1000;

/// A checked contact: its name (trimmed), the key that makes names unique per owner, its
/// addresses (lower-cased, without repeats, in the order given), and `addLinks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContactInput {
    pub name: String,
    pub name_folded: String,
    pub emails: Vec<String>,
    pub add_links: bool,
}

fn invalid(field: &str, why: &str) -> ApiError {
    ApiError::field(ErrorCode::InvalidParameter, field)
        .with_message(format!("The parameter is invalid ({field}: {why})."))
}

/// Checks the body of `POST /rest/contacts` and `PUT /rest/contacts/{id}` once its fields have
/// their JSON types (the HTTP layer answers those): every refusal is 422
/// `ERR_INVALID_PARAMETER` naming the field:
/// - `name`: blank, longer than [`NAME_MAX_BYTES`] once trimmed, or with a control character;
/// - `items`: empty, or more than [`MAX_ITEMS`];
/// - `items[i].email`: not an email address.
pub fn parse_contact<S: AsRef<str>>(
    name: &str,
    items: &[S],
    add_links: bool,
) -> Result<ContactInput, ApiError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(invalid("name", "a name is required"));
    }
    if !is_clean(name, false) {
        return Err(invalid("name", "control characters are not allowed"));
    }
    if name.len() > NAME_MAX_BYTES {
        return Err(invalid("name", "a name has at most 255 bytes"));
    }
    if items.is_empty() {
        return Err(invalid("items", "at least one address is required"));
    }
    if items.len() > MAX_ITEMS {
        return Err(invalid("items", "a contact has at most 100 addresses"));
    }
    let mut emails: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let field = format!("items[{i}].email");
        let email = parse_email(item.as_ref()).map_err(|why| invalid(&field, why))?;
        if !emails.contains(&email) {
            emails.push(email);
        }
    }
    Ok(ContactInput {
        name: name.to_string(),
        name_folded: crate::content::fold_name(name),
        emails,
        add_links,
    })
}

/// Checks the `emails` of `POST` and `DELETE /rest/externalDL` once they are strings (the HTTP
/// layer answers the JSON types): 1 to [`MAX_DL_EMAILS`] addresses, lower-cased, without
/// repeats, in the order given. None: 422 `ERR_INPUT_REQUIRED`; too many, or an item that is
/// not an address: `ERR_INPUT_INVALID_FORMAT` (naming `emails[i]`).
pub fn parse_email_list<S: AsRef<str>>(items: &[S]) -> Result<Vec<String>, ApiError> {
    if items.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "emails"));
    }
    if items.len() > MAX_DL_EMAILS {
        return Err(
            ApiError::field(ErrorCode::InputInvalidFormat, "emails").with_message(
                "The value has an invalid format (emails: at most 1000 addresses per call).",
            ),
        );
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, v) in items.iter().enumerate() {
        let field = format!("emails[{i}]");
        let email = parse_email(v.as_ref()).map_err(|why| {
            ApiError::field(ErrorCode::InputInvalidFormat, field.clone())
                .with_message(format!("The value has an invalid format ({field}: {why})."))
        })?;
        if !out.contains(&email) {
            out.push(email);
        }
    }
    Ok(out)
}

/// One address: clean text that [`Email`] accepts, lower-cased.
fn parse_email(s: &str) -> Result<String, &'static str> {
    if !is_clean(s, false) {
        return Err("control characters are not allowed");
    }
    Email::parse(s)
        .map(Email::into_string)
        .map_err(|_| "not an email address")
}

#[cfg(test)]
mod tests {
    // The JSON types of the bodies are the HTTP layer's (its contact and external-list tests
    // run every case through the body and these checks).
    use super::*;

    #[test]
    fn a_contact_is_trimmed_folded_and_its_addresses_lower_cased_once() {
        let c = parse_contact(
            "  Zoë Müller ",
            &["Zoe@Example.COM", "zoe@example.com", "z2@example.org"],
            false,
        )
        .unwrap();
        assert_eq!(c.name, "Zoë Müller");
        assert_eq!(c.name_folded, "zoë müller");
        assert_eq!(c.emails, ["zoe@example.com", "z2@example.org"]);
    }

    #[test]
    fn every_bad_value_is_invalid_parameter_naming_it() {
        let ok = ["a@example.com"];
        let many = vec!["a@example.com"; 101];
        let long = "x".repeat(256);
        let wide = "ä".repeat(128);
        for (name, items, field) in [
            ("  ", &ok[..], "name"),
            ("a\u{0}b", &ok[..], "name"),
            ("a\nb", &ok[..], "name"),
            (long.as_str(), &ok[..], "name"),
            (wide.as_str(), &ok[..], "name"),
            ("n", &[][..], "items"),
            ("n", &many[..], "items"),
            ("n", &["a@example.com", "nope"][..], "items[1].email"),
            ("n", &["a\u{7}@example.com"][..], "items[0].email"),
        ] {
            let e = parse_contact(name, items, false).unwrap_err();
            assert_eq!(
                (e.code, e.status, e.field.unwrap_or_default()),
                (ErrorCode::InvalidParameter, 422, field.to_string()),
                "{name:?} {items:?}"
            );
        }
        // The limits themselves are allowed.
        let items: Vec<String> = (0..100).map(|i| format!("u{i}@example.com")).collect();
        let c = parse_contact(&"x".repeat(255), &items, true).unwrap();
        assert_eq!(c.emails.len(), 100);
        assert!(c.add_links);
    }

    #[test]
    fn email_lists() {
        assert_eq!(
            parse_email_list(&["A@x.io", "a@x.io", "b@x.io"]).unwrap(),
            ["a@x.io", "b@x.io"]
        );
        let many: Vec<String> = (0..1001).map(|i| format!("u{i}@x.io")).collect();
        for (items, code, field) in [
            (Vec::new(), ErrorCode::InputRequired, "emails"),
            (
                vec!["a@x.io".to_string(), "no".to_string()],
                ErrorCode::InputInvalidFormat,
                "emails[1]",
            ),
            (
                vec!["x\u{0}@x.io".to_string()],
                ErrorCode::InputInvalidFormat,
                "emails[0]",
            ),
            (many, ErrorCode::InputInvalidFormat, "emails"),
        ] {
            let e = parse_email_list(&items).unwrap_err();
            assert_eq!(
                (e.code, e.field.as_deref()),
                (code, Some(field)),
                "{items:?}"
            );
        }
    }
}
