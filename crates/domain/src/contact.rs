//! Contacts and external distribution lists: what their request bodies must hold.
//!
//! A contact body `{name, items: [{email}]}` answers every refusal of a field with 422
//! `ERR_INVALID_PARAMETER` naming the field (the one code the interface gives the contact
//! calls), an external-distribution-list body `{emails: [...]}` the usual codes of the field.

use crate::input::{is_clean, Fields};
use crate::Email;
use coffer_errors::{ApiError, ErrorCode};
use serde_json::Value;

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

/// Reads the body of `POST /rest/contacts` and `PUT /rest/contacts/{id}`. A body that is not a
/// JSON object is 400 `ERR_REQUEST_INVALID_JSON`; every other refusal 422
/// `ERR_INVALID_PARAMETER` naming the field:
/// - `name`: missing, not a string, blank, longer than [`NAME_MAX_BYTES`] once trimmed, or with
///   a control character;
/// - `items`: missing, not an array, empty, or more than [`MAX_ITEMS`];
/// - `items[i].email`: an item that is not an object with an email address;
/// - `addLinks`: not a boolean.
pub fn parse_contact(body: &Value) -> Result<ContactInput, ApiError> {
    let f = Fields::of(body)?;
    let add_links = f
        .add_links()
        .map_err(|_| invalid("addLinks", "addLinks is true or false"))?;
    let name = match body.get("name") {
        None | Some(Value::Null) => return Err(invalid("name", "a name is required")),
        Some(Value::String(s)) => s.trim(),
        Some(_) => return Err(invalid("name", "a name is a string")),
    };
    if name.is_empty() {
        return Err(invalid("name", "a name is required"));
    }
    if !is_clean(name, false) {
        return Err(invalid("name", "control characters are not allowed"));
    }
    if name.len() > NAME_MAX_BYTES {
        return Err(invalid("name", "a name has at most 255 bytes"));
    }
    let items = match f.opt_array("items") {
        Ok(Some(a)) => a,
        Ok(None) => return Err(invalid("items", "at least one address is required")),
        Err(_) => return Err(invalid("items", "items is an array of {email}")),
    };
    if items.is_empty() {
        return Err(invalid("items", "at least one address is required"));
    }
    if items.len() > MAX_ITEMS {
        return Err(invalid("items", "a contact has at most 100 addresses"));
    }
    let mut emails: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let field = format!("items[{i}].email");
        let email = item
            .get("email")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(&field, "each item is {email} with an address"))?;
        let email = parse_email(email).map_err(|why| invalid(&field, why))?;
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

/// One address: clean text that [`Email`] accepts, lower-cased.
fn parse_email(s: &str) -> Result<String, &'static str> {
    if !is_clean(s, false) {
        return Err("control characters are not allowed");
    }
    Email::parse(s)
        .map(Email::into_string)
        .map_err(|_| "not an email address")
}

/// Reads `{emails: [...]}` of `POST` and `DELETE /rest/externalDL`: 1 to [`MAX_DL_EMAILS`]
/// addresses, lower-cased, without repeats, in the order given. Missing or empty: 422
/// `ERR_INPUT_REQUIRED`; not an array: `ERR_INPUT_NOT_ARRAY`; too many, or an item that is not
/// an address: `ERR_INPUT_INVALID_FORMAT` (naming `emails[i]`).
pub fn parse_email_list(body: &Value) -> Result<Vec<String>, ApiError> {
    let f = Fields::of(body)?;
    let items = f
        .opt_array("emails")?
        .filter(|a| !a.is_empty())
        .ok_or_else(|| ApiError::field(ErrorCode::InputRequired, "emails"))?;
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
        let bad = |why: &str| {
            ApiError::field(ErrorCode::InputInvalidFormat, field.clone())
                .with_message(format!("The value has an invalid format ({field}: {why})."))
        };
        let email = match v.as_str() {
            Some(s) => parse_email(s).map_err(bad)?,
            None => return Err(bad("not an email address")),
        };
        if !out.contains(&email) {
            out.push(email);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(body: Value) -> (ErrorCode, u16, String) {
        let e = parse_contact(&body).unwrap_err();
        (e.code, e.status, e.field.unwrap_or_default())
    }

    #[test]
    fn a_contact_is_trimmed_folded_and_its_addresses_lower_cased_once() {
        let c = parse_contact(&json!({
            "name": "  Zoë Müller ",
            "items": [{"email": "Zoe@Example.COM"}, {"email": "zoe@example.com"}, {"email": "z2@example.org", "isDistributionList": true}],
        }))
        .unwrap();
        assert_eq!(c.name, "Zoë Müller");
        assert_eq!(c.name_folded, "zoë müller");
        assert_eq!(c.emails, ["zoe@example.com", "z2@example.org"]);
    }

    #[test]
    fn every_bad_field_is_invalid_parameter_naming_it() {
        let ok = json!([{"email": "a@example.com"}]);
        for (body, field) in [
            (json!({"items": ok}), "name"),
            (json!({"name": null, "items": ok}), "name"),
            (json!({"name": "  ", "items": ok}), "name"),
            (json!({"name": 5, "items": ok}), "name"),
            (json!({"name": "a\u{0}b", "items": ok}), "name"),
            (json!({"name": "a\nb", "items": ok}), "name"),
            (json!({"name": "x".repeat(256), "items": ok}), "name"),
            (json!({"name": "ä".repeat(128), "items": ok}), "name"),
            (json!({"name": "n"}), "items"),
            (json!({"name": "n", "items": []}), "items"),
            (json!({"name": "n", "items": "a@example.com"}), "items"),
            (
                json!({"name": "n", "items": vec![json!({"email": "a@example.com"}); 101]}),
                "items",
            ),
            (
                json!({"name": "n", "items": ["a@example.com"]}),
                "items[0].email",
            ),
            (
                json!({"name": "n", "items": [{"mail": "a@example.com"}]}),
                "items[0].email",
            ),
            (
                json!({"name": "n", "items": [{"email": "a@example.com"}, {"email": "nope"}]}),
                "items[1].email",
            ),
            (
                json!({"name": "n", "items": [{"email": "a\u{7}@example.com"}]}),
                "items[0].email",
            ),
            (
                json!({"name": "n", "items": [{"email": 3}]}),
                "items[0].email",
            ),
            (
                json!({"name": "n", "items": ok, "addLinks": {}}),
                "addLinks",
            ),
        ] {
            assert_eq!(
                refused(body.clone()),
                (ErrorCode::InvalidParameter, 422, field.to_string()),
                "{body}"
            );
        }
        assert_eq!(
            parse_contact(&json!([1])).unwrap_err().code,
            ErrorCode::RequestInvalidJson
        );
        // The limits themselves are allowed.
        let c = parse_contact(&json!({
            "name": "x".repeat(255),
            "items": (0..100).map(|i| json!({"email": format!("u{i}@example.com")})).collect::<Vec<_>>(),
        }))
        .unwrap();
        assert_eq!(c.emails.len(), 100);
    }

    #[test]
    fn email_lists() {
        assert_eq!(
            parse_email_list(&json!({"emails": ["A@x.io", "a@x.io", "b@x.io"]})).unwrap(),
            ["a@x.io", "b@x.io"]
        );
        for (body, code, field) in [
            (json!({}), ErrorCode::InputRequired, "emails"),
            (json!({"emails": []}), ErrorCode::InputRequired, "emails"),
            (
                json!({"emails": "a@x.io"}),
                ErrorCode::InputNotArray,
                "emails",
            ),
            (
                json!({"emails": ["a@x.io", "no"]}),
                ErrorCode::InputInvalidFormat,
                "emails[1]",
            ),
            (
                json!({"emails": [1]}),
                ErrorCode::InputInvalidFormat,
                "emails[0]",
            ),
            (
                json!({"emails": (0..1001).map(|i| format!("u{i}@x.io")).collect::<Vec<_>>()}),
                ErrorCode::InputInvalidFormat,
                "emails",
            ),
        ] {
            let e = parse_email_list(&body).unwrap_err();
            assert_eq!((e.code, e.field.as_deref()), (code, Some(field)), "{body}");
        }
    }
}
