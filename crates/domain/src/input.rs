//! Typed reading of JSON request bodies, so that a missing or mistyped field answers the
//! catalogue's 422 code naming the field, never a parser's text.
//!
//! Every string read here is also clean text (one rule for every field of every endpoint, see
//! [`is_clean`]): a NUL or another control character answers 422 `ERR_INPUT_INVALID_FORMAT`
//! naming the field, so such input never reaches the database. Fields that document several
//! lines (a description, a PEM key) are read with [`Fields::req_text`] / [`Fields::opt_text`],
//! which also admit line feed, carriage return and tab.

use coffer_errors::{ApiError, ErrorCode};
use serde_json::{Map, Value};

/// Whether text may be stored: no NUL and no other control character (Unicode category Cc,
/// U+0000–U+001F and U+007F–U+009F). `multiline` text also admits `\n`, `\r` and `\t`.
pub fn is_clean(s: &str, multiline: bool) -> bool {
    s.chars()
        .all(|c| !c.is_control() || (multiline && matches!(c, '\n' | '\r' | '\t')))
}

/// The 422 answer for a value with control characters.
pub fn unclean(field: &str) -> ApiError {
    ApiError::field(ErrorCode::InputInvalidFormat, field).with_message(format!(
        "The value has an invalid format ({field}: control characters are not allowed)."
    ))
}

/// A JSON object body.
pub struct Fields<'a>(&'a Map<String, Value>);

impl<'a> Fields<'a> {
    /// The body must be an object.
    pub fn of(v: &'a Value) -> Result<Fields<'a>, ApiError> {
        v.as_object().map(Fields).ok_or_else(|| {
            ApiError::new(ErrorCode::RequestInvalidJson)
                .with_message("The request body must be a JSON object.")
        })
    }

    pub fn has(&self, name: &str) -> bool {
        self.0.get(name).is_some_and(|v| !v.is_null())
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    /// A required one-line string; blank counts as missing.
    pub fn req_str(&self, name: &str) -> Result<&'a str, ApiError> {
        required(self.opt_str(name)?, name)
    }

    /// An optional one-line string: no control character at all.
    pub fn opt_str(&self, name: &str) -> Result<Option<&'a str>, ApiError> {
        self.string(name, false)
    }

    /// A required text that may span lines; blank counts as missing.
    pub fn req_text(&self, name: &str) -> Result<&'a str, ApiError> {
        required(self.opt_text(name)?, name)
    }

    /// An optional text that may span lines: line feed, carriage return and tab are admitted,
    /// other control characters are not.
    pub fn opt_text(&self, name: &str) -> Result<Option<&'a str>, ApiError> {
        self.string(name, true)
    }

    fn string(&self, name: &str, multiline: bool) -> Result<Option<&'a str>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) if is_clean(s, multiline) => Ok(Some(s.as_str())),
            Some(Value::String(_)) => Err(unclean(name)),
            Some(_) => Err(ApiError::field(ErrorCode::InputNotString, name)),
        }
    }

    pub fn opt_int(&self, name: &str) -> Result<Option<i64>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| ApiError::field(ErrorCode::InputNotInteger, name)),
            Some(_) => Err(ApiError::field(ErrorCode::InputNotInteger, name)),
        }
    }

    /// An optional integer no smaller than `min` that fits an `i32`.
    pub fn opt_int_min(&self, name: &str, min: i64) -> Result<Option<i32>, ApiError> {
        match self.opt_int(name)? {
            None => Ok(None),
            Some(v) if v < min => Err(ApiError::field(ErrorCode::InputMinValue, name)),
            Some(v) => i32::try_from(v)
                .map(Some)
                .map_err(|_| ApiError::field(ErrorCode::InputInvalidFormat, name)),
        }
    }

    pub fn opt_bool(&self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(ApiError::field(ErrorCode::InputNotBoolean, name)),
        }
    }

    pub fn opt_array(&self, name: &str) -> Result<Option<&'a Vec<Value>>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(_) => Err(ApiError::field(ErrorCode::InputNotArray, name)),
        }
    }

    /// `addLinks`, which every create and update body may carry.
    pub fn add_links(&self) -> Result<bool, ApiError> {
        Ok(self.opt_bool("addLinks")?.unwrap_or(false))
    }
}

fn required<'a>(v: Option<&'a str>, name: &str) -> Result<&'a str, ApiError> {
    match v {
        Some(s) if !s.trim().is_empty() => Ok(s),
        _ => Err(ApiError::field(ErrorCode::InputRequired, name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_fields() {
        let v = json!({"name": "a", "blank": "  ", "n": 3, "big": 1u64 << 40, "b": true, "arr": [1], "nul": null});
        let f = Fields::of(&v).unwrap();
        assert_eq!(f.req_str("name").unwrap(), "a");
        assert_eq!(
            f.req_str("blank").unwrap_err().code,
            ErrorCode::InputRequired
        );
        assert_eq!(
            f.req_str("missing").unwrap_err().code,
            ErrorCode::InputRequired
        );
        assert_eq!(f.req_str("nul").unwrap_err().code, ErrorCode::InputRequired);
        assert_eq!(f.req_str("n").unwrap_err().code, ErrorCode::InputNotString);
        assert_eq!(f.opt_int("n").unwrap(), Some(3));
        assert_eq!(
            f.opt_int("name").unwrap_err().code,
            ErrorCode::InputNotInteger
        );
        assert_eq!(
            f.opt_int_min("n", 4).unwrap_err().code,
            ErrorCode::InputMinValue
        );
        assert_eq!(
            f.opt_int_min("big", 1).unwrap_err().code,
            ErrorCode::InputInvalidFormat
        );
        assert_eq!(f.opt_bool("b").unwrap(), Some(true));
        assert_eq!(
            f.opt_bool("n").unwrap_err().code,
            ErrorCode::InputNotBoolean
        );
        assert_eq!(
            f.opt_array("name").unwrap_err().code,
            ErrorCode::InputNotArray
        );
        assert_eq!(f.req_str("name").map_err(|e| e.field).unwrap(), "a");
        assert!(Fields::of(&json!([1])).is_err());
    }

    #[test]
    fn control_characters_are_refused_naming_the_field() {
        let v = json!({
            "nul": "a\u{0}b", "bell": "a\u{7}", "del": "a\u{7f}", "c1": "a\u{85}",
            "lines": "one\ntwo\r\n\tthree", "plain": "Zoë – ok ✓",
        });
        let f = Fields::of(&v).unwrap();
        for name in ["nul", "bell", "del", "c1", "lines"] {
            let e = f.opt_str(name).unwrap_err();
            assert_eq!(e.code, ErrorCode::InputInvalidFormat, "{name}");
            assert_eq!(e.field.as_deref(), Some(name));
            assert_eq!(e.status, 422);
            assert_eq!(
                f.req_str(name).unwrap_err().code,
                ErrorCode::InputInvalidFormat
            );
        }
        assert_eq!(f.opt_text("lines").unwrap(), Some("one\ntwo\r\n\tthree"));
        assert_eq!(f.req_text("lines").unwrap(), "one\ntwo\r\n\tthree");
        for name in ["nul", "bell", "del", "c1"] {
            assert_eq!(
                f.opt_text(name).unwrap_err().code,
                ErrorCode::InputInvalidFormat,
                "{name}"
            );
        }
        assert_eq!(f.req_str("plain").unwrap(), "Zoë – ok ✓");
        assert!(is_clean("", false));
        assert!(!is_clean("\u{0}", true));
    }
}
