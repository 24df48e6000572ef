//! Typed reading of JSON request bodies, so that a missing or mistyped field answers the
//! catalogue's 422 code naming the field, never a parser's text.

use coffer_errors::{ApiError, ErrorCode};
use serde_json::{Map, Value};

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

    /// A required string; blank counts as missing.
    pub fn req_str(&self, name: &str) -> Result<&'a str, ApiError> {
        match self.opt_str(name)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            _ => Err(ApiError::field(ErrorCode::InputRequired, name)),
        }
    }

    pub fn opt_str(&self, name: &str) -> Result<Option<&'a str>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
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
}
